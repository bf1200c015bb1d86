"""The automation server's domain: users and sessions now; devices, telemetry, rules, agents,
messages, push, dashboards and extensions each get a module here as they are built."""
