"""The op specs (ops/*.json), the JSON schema they obey (op.schema.json) and OpenVINO's opset
table (openvino_opsets.json): data, no code that irtool runs.

pyproject.toml installs this folder as the package ``irtool._schemas``, so that irtool reads
these files through importlib.resources in a checkout, an editable install, a wheel or a zip
(irtool/specs/loader.py); this folder stays their one copy in the repository.
"""
