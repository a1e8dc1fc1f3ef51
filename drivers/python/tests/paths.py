"""Where things are, resolved from this file so the tests run from any working directory."""

from pathlib import Path

TESTS = Path(__file__).resolve().parent
DRIVER_DIR = TESTS.parent
REPO = DRIVER_DIR.parent.parent
SPEC = REPO / "spec"
SCHEMA = SPEC / "driver-protocol.schema.json"
HDR_VECTORS = SPEC / "vectors" / "hdr"
SCENARIO_VECTORS = SPEC / "vectors" / "scenarios"
DELIVERY_VECTORS = SPEC / "vectors" / "delivery"
RUN_SH = DRIVER_DIR / "run.sh"
