"""set_future (``pulsar.asyncio._set_future``): a callback-style outcome settles a future once, from any thread."""

from __future__ import annotations

import asyncio
import threading

import pytest

from magnetar.client import asyncio as magnetar_asyncio
from magnetar.client.core.futures import set_future, settle
from magnetar.client.exceptions import PulsarError, Result, Timeout, TopicNotFound

from ..conftest import run


def test_the_asyncio_face_exports_it_under_the_official_private_name() -> None:
    assert magnetar_asyncio._set_future is set_future


def test_ok_sets_the_value_and_a_code_sets_its_exception() -> None:
    run(_test_ok_sets_the_value_and_a_code_sets_its_exception())


async def _test_ok_sets_the_value_and_a_code_sets_its_exception() -> None:
    loop = asyncio.get_running_loop()
    ok, none, failed, given = (loop.create_future() for _ in range(4))
    set_future(ok, Result.Ok, 7)
    set_future(none, None, "v")  # magnetar's callbacks pass None for success
    set_future(failed, Result.Timeout, None)
    set_future(given, TopicNotFound("gone"), None)
    assert (ok.result(), none.result()) == (7, "v")
    assert isinstance(failed.exception(), Timeout) and failed.exception().error() == Result.Timeout
    assert isinstance(given.exception(), TopicNotFound) and str(given.exception()) == "gone"


def test_a_cancelled_or_resolved_future_is_left_as_it_is() -> None:
    run(_test_a_cancelled_or_resolved_future_is_left_as_it_is())


async def _test_a_cancelled_or_resolved_future_is_left_as_it_is() -> None:
    loop = asyncio.get_running_loop()
    cancelled, resolved = loop.create_future(), loop.create_future()
    cancelled.cancel()
    resolved.set_result("first")
    set_future(cancelled, Result.Ok, None)
    set_future(resolved, Result.Ok, "late")
    set_future(resolved, Result.Timeout, None)
    await asyncio.sleep(0)
    assert cancelled.cancelled()
    assert resolved.result() == "first"


def test_from_another_thread_it_settles_on_the_futures_loop() -> None:
    run(_test_from_another_thread_it_settles_on_the_futures_loop())


async def _test_from_another_thread_it_settles_on_the_futures_loop() -> None:
    loop = asyncio.get_running_loop()
    fut = loop.create_future()
    seen: list[int] = []
    fut.add_done_callback(lambda _f: seen.append(threading.get_ident()))
    thread = threading.Thread(target=set_future, args=(fut, Result.Ok, 42))
    thread.start()
    assert await asyncio.wait_for(fut, 5) == 42
    thread.join()
    assert seen == [threading.get_ident()]
    late = loop.create_future()
    late.set_result(1)
    thread = threading.Thread(target=set_future, args=(late, Result.UnknownError, None))
    thread.start()
    thread.join()
    await asyncio.sleep(0)
    assert late.result() == 1


def test_settle_is_once() -> None:
    run(_test_settle_is_once())


async def _test_settle_is_once() -> None:
    fut = asyncio.get_running_loop().create_future()
    settle(fut, None, 1)
    settle(fut, PulsarError("late"), None)
    assert fut.result() == 1


def test_an_unnamed_code_still_carries_it() -> None:
    loop = asyncio.new_event_loop()
    try:
        fut = loop.create_future()
        set_future(fut, Result.UnknownError, None)  # no running loop here: handed to the future's
        loop.run_until_complete(asyncio.sleep(0))
        assert fut.exception().error() == Result.UnknownError
    finally:
        loop.close()
    with pytest.raises(ValueError):
        set_future(asyncio.new_event_loop().create_future(), 9999, None)
