"""The small language in which op specs write dims.

Grammar (whitespace ignored)::

    expr    := sum ('?' expr ':' expr)?      # 'flag ? a : b', flag a bool attribute
    sum     := product ('+' product)*
    product := atom ('*' atom)*
    atom    := INT | NAME | '(' expr ')'

Names are symbols (``batch_size``, ``hidden_size``, ...) bound from attributes or from
the dims of the ports; a name in front of ``?`` is a bool attribute.  Only ``+`` and
``*`` exist, so every expression is linear in any one symbol once the others are known,
which is what lets :meth:`Expr.solve` bind a symbol from a dim such as ``3*hidden_size``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

from irtool.core.errors import IrtoolError

Flags = Mapping[str, object]
Symbols = Mapping[str, int]

_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(.))")


class ExpressionError(IrtoolError, ValueError):
    """A dim expression in a spec file that does not parse."""


@dataclass(frozen=True)
class Expr:
    """Base of the expression nodes."""

    def evaluate(self, symbols: Symbols, flags: Flags) -> int | None:
        """The value, or None while a symbol it needs is unbound."""
        raise NotImplementedError

    def free_symbols(self, symbols: Symbols, flags: Flags) -> frozenset[str]:
        """Unbound symbols on the branch that the flags select."""
        raise NotImplementedError

    def text(self, flags: Flags) -> str:
        """The expression as written, with conditionals resolved by the flags."""
        raise NotImplementedError

    def flags_used(self, flags: Flags) -> tuple[str, ...]:
        return ()

    def solve(self, value: int, symbols: Symbols, flags: Flags) -> tuple[str, int | None] | None:
        """Bind the one unbound symbol so that the expression equals ``value``.

        Returns ``(name, bound)``, with ``bound`` None when no non-negative integer
        works (e.g. 7 for ``3*hidden_size``); None when there is not exactly one
        unbound symbol.
        """
        free = self.free_symbols(symbols, flags)
        if len(free) != 1:
            return None
        (name,) = free
        at = [self.evaluate({**symbols, name: n}, flags) for n in (0, 1, 2)]
        if None in at:
            return None
        base, slope = at[0], at[1] - at[0]
        if slope <= 0 or at[2] - at[1] != slope:
            return None
        quotient, remainder = divmod(value - base, slope)
        return name, (quotient if remainder == 0 and quotient >= 0 else None)


@dataclass(frozen=True)
class Num(Expr):
    value: int

    def evaluate(self, symbols: Symbols, flags: Flags) -> int | None:
        return self.value

    def free_symbols(self, symbols: Symbols, flags: Flags) -> frozenset[str]:
        return frozenset()

    def text(self, flags: Flags) -> str:
        return str(self.value)


@dataclass(frozen=True)
class Sym(Expr):
    name: str

    def evaluate(self, symbols: Symbols, flags: Flags) -> int | None:
        return symbols.get(self.name)

    def free_symbols(self, symbols: Symbols, flags: Flags) -> frozenset[str]:
        return frozenset() if self.name in symbols else frozenset({self.name})

    def text(self, flags: Flags) -> str:
        return self.name


@dataclass(frozen=True)
class BinOp(Expr):
    op: str
    left: Expr
    right: Expr

    def evaluate(self, symbols: Symbols, flags: Flags) -> int | None:
        a, b = self.left.evaluate(symbols, flags), self.right.evaluate(symbols, flags)
        if a is None or b is None:
            return None
        return a * b if self.op == "*" else a + b

    def free_symbols(self, symbols: Symbols, flags: Flags) -> frozenset[str]:
        return self.left.free_symbols(symbols, flags) | self.right.free_symbols(symbols, flags)

    def text(self, flags: Flags) -> str:
        def side(e: Expr) -> str:
            t = e.text(flags)
            return f"({t})" if self.op == "*" and isinstance(e, BinOp) and e.op == "+" else t
        return f"{side(self.left)}{self.op}{side(self.right)}"

    def flags_used(self, flags: Flags) -> tuple[str, ...]:
        return self.left.flags_used(flags) + self.right.flags_used(flags)


@dataclass(frozen=True)
class Cond(Expr):
    flag: str
    then: Expr
    otherwise: Expr

    def _branch(self, flags: Flags) -> Expr:
        return self.then if flags.get(self.flag) else self.otherwise

    def evaluate(self, symbols: Symbols, flags: Flags) -> int | None:
        return self._branch(flags).evaluate(symbols, flags)

    def free_symbols(self, symbols: Symbols, flags: Flags) -> frozenset[str]:
        return self._branch(flags).free_symbols(symbols, flags)

    def text(self, flags: Flags) -> str:
        return self._branch(flags).text(flags)

    def flags_used(self, flags: Flags) -> tuple[str, ...]:
        return (self.flag,) + self._branch(flags).flags_used(flags)


def parse_expression(source: str | int) -> Expr:
    """Parse a dim expression of a spec file; raises ExpressionError with the text."""
    if isinstance(source, int):
        return Num(source)
    tokens = []
    for number, name, other in _TOKEN.findall(source):
        tokens.append(("int", number) if number else ("name", name) if name else ("op", other))
    parser = _Parser(tokens, source)
    expr = parser.expr()
    if parser.pos != len(tokens):
        raise ExpressionError(f"dim expression {source!r}: unexpected {tokens[parser.pos][1]!r}")
    return expr


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]], source: str):
        self.tokens, self.source, self.pos = tokens, source, 0

    def _peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _take(self, kind: str, value: str | None = None) -> str:
        token = self._peek()
        if token is None or token[0] != kind or (value is not None and token[1] != value):
            found = "the end" if token is None else repr(token[1])
            raise ExpressionError(f"dim expression {self.source!r}: expected {value or kind}, found {found}")
        self.pos += 1
        return token[1]

    def expr(self) -> Expr:
        start = self.pos
        left = self.sum()
        if self._peek() == ("op", "?"):
            if not isinstance(left, Sym) or self.pos - start != 1:
                raise ExpressionError(f"dim expression {self.source!r}: '?' must follow a flag name")
            self._take("op", "?")
            then = self.expr()
            self._take("op", ":")
            return Cond(left.name, then, self.expr())
        return left

    def sum(self) -> Expr:
        left = self.product()
        while self._peek() == ("op", "+"):
            self._take("op", "+")
            left = BinOp("+", left, self.product())
        return left

    def product(self) -> Expr:
        left = self.atom()
        while self._peek() == ("op", "*"):
            self._take("op", "*")
            left = BinOp("*", left, self.atom())
        return left

    def atom(self) -> Expr:
        token = self._peek()
        if token == ("op", "("):
            self._take("op", "(")
            inner = self.expr()
            self._take("op", ")")
            return inner
        if token is not None and token[0] == "int":
            return Num(int(self._take("int")))
        return Sym(self._take("name"))
