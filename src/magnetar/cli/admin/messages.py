"""``magnetar admin topics``: peek-messages, examine-message and get-message-by-id (a batch shows each
of its messages)."""

from __future__ import annotations

import base64
import json
from typing import Annotated, Any

import typer

from magnetar.cli.admin.client import AdminCliError, RawReply
from magnetar.cli.admin.context import SubOpt, TopicArg, call, fail, state, topics_app
from magnetar.cli.admin.output import new_table
from magnetar.cli.admin.parsing import q, topic_path
from magnetar.cli.admin.subscriptions import sub_path


def _messages_of(reply: RawReply) -> list[dict[str, Any]]:
    """Split a peeked entry into its messages (a batch holds several)."""
    # only for peeked messages, not for the other topic commands: 70-95 ms CPU (python -X importtime)
    from magnetar.protocol.batch import decode_batch
    from magnetar.protocol.framing import ProtocolError

    headers = {k.lower(): v for k, v in reply.headers.items()}
    msg_id = headers.get("x-pulsar-message-id", "")
    props = {k[len("x-pulsar-property-"):]: v for k, v in reply.headers.items() if k.lower().startswith("x-pulsar-property-")}
    base = {"publishTime": headers.get("x-pulsar-publish-time"), "producerName": headers.get("x-pulsar-producer-name")}
    count = headers.get("x-pulsar-num-batch-message")
    if count is not None and headers.get("x-pulsar-is-encrypted") != "true":
        try:
            parts = decode_batch(reply.body, int(count))
        except (ProtocolError, ValueError):
            parts = None
        if parts is not None:
            return [
                {"messageId": f"{msg_id}:{i}", **base,
                 "properties": {kv.key: kv.value for kv in meta.properties},
                 "key": meta.partition_key if meta.HasField("partition_key") else None,
                 "payload": payload}
                for i, (meta, payload) in enumerate(parts)
            ]
    return [{"messageId": msg_id, **base, "properties": props, "key": headers.get("x-pulsar-partition-key"),
             "payload": reply.body}]


def _print_messages(ctx: typer.Context, messages: list[dict[str, Any]]) -> None:
    st = state(ctx)
    if st.json:
        out = []
        for m in messages:
            payload: bytes = m["payload"]
            try:
                text, encoding = payload.decode("utf-8"), "utf-8"
            except UnicodeDecodeError:
                text, encoding = base64.b64encode(payload).decode(), "base64"
            out.append({**{k: v for k, v in m.items() if k != "payload"}, "payload": text, "encoding": encoding})
        typer.echo(json.dumps(out, indent=2))
        return
    for m in messages:
        table = new_table(show_header=False, title=f"Message ID: {m['messageId']}")
        table.add_column("field", style="bold")
        table.add_column("value", overflow="fold")
        table.add_row("publish time", m.get("publishTime") or "")
        if m.get("key"):
            table.add_row("key", m["key"])
        for k, v in (m.get("properties") or {}).items():
            table.add_row(f"property {k}", v)
        payload = m["payload"]
        try:
            shown = payload.decode("utf-8")
        except UnicodeDecodeError:
            shown = payload.hex(" ")
        table.add_row("payload", shown)
        st.console.print(table)


@topics_app.command("peek-messages")
def topics_peek(
    ctx: typer.Context,
    topic: TopicArg,
    subscription: SubOpt,
    count: Annotated[int, typer.Option("--count", "-n", help="Messages to show")] = 1,
) -> None:
    """Show the next messages of a subscription without acknowledging them."""
    client = state(ctx).client
    messages: list[dict[str, Any]] = []
    position = 1
    while len(messages) < count:
        try:
            reply = client.get(sub_path(topic, subscription) + f"/position/{position}", raw=True)
        except AdminCliError as exc:
            if messages and exc.message.startswith("404"):
                break
            fail(exc.message)
        messages.extend(_messages_of(reply))
        position += 1
    _print_messages(ctx, messages[:count])


@topics_app.command("examine-message")
def topics_examine(
    ctx: typer.Context,
    topic: TopicArg,
    initial_position: Annotated[str, typer.Option("--initialPosition", "-i", help="earliest or latest")] = "latest",
    position: Annotated[int, typer.Option("--messagePosition", "-m", help="1 is the first (or last) message")] = 1,
) -> None:
    """Show the n-th message from the earliest or the latest one."""
    path, _ = topic_path(topic)
    query = f"?initialPosition={q(initial_position)}&messagePosition={position}"
    reply = call(state(ctx).client.get, path + "/examinemessage" + query, raw=True)
    _print_messages(ctx, _messages_of(reply))


@topics_app.command("get-message-by-id")
def topics_get_message_by_id(
    ctx: typer.Context,
    topic: TopicArg,
    ledger_id: Annotated[int, typer.Option("--ledgerId", "-l", help="Ledger id of the message")],
    entry_id: Annotated[int, typer.Option("--entryId", "-e", help="Entry id of the message")],
) -> None:
    """Show the stored message (or batch) with this ledger and entry id."""
    path, _ = topic_path(topic)
    reply = call(state(ctx).client.get, path + f"/ledger/{ledger_id}/entry/{entry_id}", raw=True)
    _print_messages(ctx, _messages_of(reply))
