"""Gavel's policies (OSDI'20): its programs and the baselines it published."""
