"""The shared machinery of the benchmark suites in bench/.

Modules:
    proc    run a child process: time, CPU (user + sys), peak RSS, its JSON result
    server  nats-server and `msgbench grpc serve` on a free loopback port
    build   msgbench (cargo) and the Go reference bench/ref (go build)
    fmt     numbers, ratios, verdicts, Markdown tables, durations
    env     the facts about the machine a report starts with
    suite   Case and Suite: the base class every suite subclasses
    hdr     HdrHistogram V2 decoding (the soak test's interval log)

Standard library only (Python 3.11).
"""

from pathlib import Path

# The repository and its bench/ folder.
BENCH = Path(__file__).resolve().parent.parent
REPO = BENCH.parent
