from __future__ import annotations

import pytest

from .checks import evaluate

RESULT = {"delivery": {"lost": 0, "accounting": "exact", "duplicated": None}, "clients": [{}, {}]}


@pytest.mark.parametrize(
    "check, ok",
    [
        ("delivery.lost == 0", True),
        ("delivery.lost != 0", False),
        ("delivery.lost >= 0", True),
        ("delivery.lost < 0", False),
        ('delivery.accounting == "exact"', True),
        ('delivery.accounting == "count"', False),
        ("delivery.duplicated == null", True),
        ("clients.length == 2", True),
        ("clients.length > 2", False),
        ("latency.count == 0", False),  # a missing path fails
        ('delivery.accounting > 1', False),
        ("delivery.lost == false", False),  # 0 is not false in JSON
    ],
)
def test_evaluate(check: str, ok: bool) -> None:
    assert evaluate(check, RESULT)[0] is ok


def test_rejects_malformed_check() -> None:
    with pytest.raises(ValueError):
        evaluate("delivery.lost", RESULT)
