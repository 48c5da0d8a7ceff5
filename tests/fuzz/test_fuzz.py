"""A short fuzz run for the unit suite: the kept corpus replayed, then generated inputs (hypothesis)
through the frame decoder and a broker session. The long, coverage-guided run is
``tools/fuzz_broker.py`` (atheris) over the same targets and corpus."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz.harness import SessionTarget, decode_target, seeds

CORPUS = Path(__file__).parent / "corpus"


@pytest.fixture(scope="module")
def session_target() -> Iterator[SessionTarget]:
    logging.disable(logging.WARNING)  # every bad frame logs why its connection closed
    target = SessionTarget()
    yield target
    target.close()
    logging.disable(logging.NOTSET)


def test_the_corpus_is_kept_in_the_repository() -> None:
    assert len(list(CORPUS.iterdir())) >= len(seeds())


def test_corpus_replays_through_the_decoder_and_a_session(session_target: SessionTarget) -> None:
    for path in sorted(CORPUS.iterdir()):
        data = path.read_bytes()
        decode_target(data)
        session_target.run(data)


def test_the_seeds_reach_the_handlers(session_target: SessionTarget) -> None:
    session_target.run(seeds()["produce-consume"])
    topic = session_target.service.topics.get("persistent://public/default/fuzz")
    assert topic is not None and "s" in topic.subscriptions
    assert session_target.run(seeds()["raw"]), "bad framing closes the connection"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=400))
def test_generated_bytes_through_the_decoder(data: bytes) -> None:
    decode_target(data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(sorted(seeds().values())), max_size=3), st.binary(max_size=300))
def test_generated_commands_through_a_session(session_target: SessionTarget, prefix: list[bytes], data: bytes) -> None:
    session_target.run(b"".join(prefix) + data)
