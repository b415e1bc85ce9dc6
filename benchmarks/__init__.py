"""Reference benchmarks behind the figures in the README (run as ``python -m benchmarks.<name>``)."""
