"""irtool: validate, build, run and regression-test OpenVINO IR for the RNN op family."""

__version__ = "0.1.0"
