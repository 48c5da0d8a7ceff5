"""`magnetar admin transactions`: pulsar-admin's transaction verbs."""

from __future__ import annotations

from ..broker.session.test_wire_errors import WireClient
from ..broker.transactions import wire_txn


def test_transaction_verbs(admin, broker, uid: str) -> None:  # noqa: ANN001
    topic = f"persistent://public/default/cli-txn-{uid}"
    c = WireClient(broker.port)
    try:
        c.connect()
        wire_txn.tc_connect(c)
        wire_txn.producer(c, topic, 1)
        txn = wire_txn.new_txn(c)
        wire_txn.add_partition(c, txn, topic)
        wire_txn.send(c, 1, 0, b"m", txn)
        most, least = str(txn[0]), str(txn[1])
        assert admin("transactions", "coordinator-stats", "-c", "0", json_output=True).json()["state"] == "Ready"
        meta = admin("transactions", "transaction-metadata", "-m", most, "-l", least, json_output=True).json()
        assert (meta["status"], list(meta["producedPartitions"])) == ("OPEN", [topic])
        slow = admin("transactions", "slow-transactions", "-t", "0", json_output=True).json()
        assert f"({most},{least})" in slow
        in_buffer = admin("transactions", "transaction-in-buffer-stats", "-t", topic, "-m", most, "-l", least,
                          json_output=True).json()
        assert in_buffer["aborted"] is False
        assert admin("transactions", "transaction-buffer-stats", "-t", topic, json_output=True).json()["ongoingTxnSize"] == 1
        wire_txn.end_txn(c, txn, commit=False)
        missing = admin("transactions", "transaction-metadata", "-m", most, "-l", least)
        assert missing.exit_code == 1 and "404" in (missing.stderr + missing.stdout)
    finally:
        c.close()
