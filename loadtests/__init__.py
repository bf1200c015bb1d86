"""Locust load tests for the twin (``make load``, ``make load-distributed``); the entry point is
``loadtests/locustfile.py``, the user classes live in the modules beside it."""
