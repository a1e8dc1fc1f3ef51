"""The driver's sequence: scenario, connect, ready, start, run with progress, result, exit."""

from __future__ import annotations

import asyncio
import sys
import traceback
from importlib.metadata import PackageNotFoundError, version

from . import LANGUAGE, LIBRARY
from .control import Control
from .kinds import Workload, make_workload
from .protocol import DriverError, Output, parse_scenario
from .run import RunClock, now_ns

EXIT_OK = 0
EXIT_ERROR = 2

PROGRESS_EVERY_S = 1.0


def library_version() -> str:
    try:
        return version(LIBRARY)
    except PackageNotFoundError:
        return "unknown"


def client_info(notes: str) -> dict[str, str]:
    info = {"language": LANGUAGE, "library": LIBRARY, "version": library_version()}
    if notes:
        info["notes"] = notes
    return info


async def report_progress(out: Output, clock: RunClock, workload: Workload) -> None:
    n = 1
    while True:
        # Ticks on the run's clock (t0 + 1 s, + 2 s, ...) so they do not drift.
        await asyncio.sleep(max(0.0, (clock.t0_ns + int(n * PROGRESS_EVERY_S * 1e9) - now_ns()) / 1e9))
        sent, received = workload.progress()
        out.progress((now_ns() - clock.t0_ns) / 1e9, sent, received)
        n += 1


async def drive(out: Output) -> int:
    control = Control(asyncio.get_running_loop())
    control.start_reading()

    first = await control.next()
    if first.kind is None:
        out.error("usage", "stdin ended before a scenario line")
        return EXIT_ERROR
    try:
        scenario = parse_scenario(first.line)
    except DriverError as e:
        out.error(e.kind, e.message)
        return EXIT_ERROR

    workload = make_workload(scenario)
    try:
        await workload.prepare()
    except DriverError as e:
        out.error(e.kind, e.message)
        await workload.close()
        return EXIT_ERROR
    except Exception as e:
        out.error("connect", f"setting up the connections failed: {type(e).__name__}: {e}")
        await workload.close()
        return EXIT_ERROR
    out.ready(client_info(workload.notes))

    t0 = await control.wait_start()
    if t0 is None:
        # stop or end of input before start: nothing ran.
        clock = RunClock(scenario, now_ns(), control.stop)
        out.result(workload.result(clock, interrupted=True).to_json())
        await workload.close()
        return EXIT_OK

    clock = RunClock(scenario, t0, control.stop)
    progress = asyncio.create_task(report_progress(out, clock, workload))
    try:
        await workload.run(clock)
        interrupted = clock.interrupted
    except Exception as e:
        traceback.print_exc(file=sys.stderr)
        out.error("internal", f"{type(e).__name__}: {e}")
        return EXIT_ERROR
    finally:
        progress.cancel()
    out.result(workload.result(clock, interrupted).to_json())
    await workload.close()
    return EXIT_OK


def main() -> int:
    out = Output.take_stdout()
    try:
        return asyncio.run(drive(out))
    except Exception as e:  # a bug: still say so in the protocol
        traceback.print_exc(file=sys.stderr)
        try:
            out.error("internal", f"{type(e).__name__}: {e}")
        except Exception:
            pass
        return EXIT_ERROR
