"""The msgbench driver for the official Python NATS client, nats-py (protocol msgbench.driver/v1)."""

PROTOCOL = "msgbench.driver/v1"
LANGUAGE = "python"
LIBRARY = "nats-py"
