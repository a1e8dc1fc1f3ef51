#!/usr/bin/env python3
"""msgbench driver for nats-py: `python3 driver.py` speaks msgbench.driver/v1 on stdin/stdout."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    from msgbench_driver.main import main
except ImportError as e:  # the requirements are missing: say so in the protocol
    print(f"msgbench-driver: {e}; run drivers/python/setup.sh", file=sys.stderr)
    message = f"cannot import {e.name or 'a dependency'} with {sys.executable}: run drivers/python/setup.sh"
    sys.stdout.write(json.dumps({"type": "error", "kind": "internal", "message": message}) + "\n")
    sys.stdout.flush()
    sys.exit(2)

if __name__ == "__main__":
    sys.exit(main())
