"""One implementation for a sync/async pair: the logic is a generator that yields what it needs
done (a statement to run, a pause, a read) and receives the answer; `run` does each step with
blocking calls, `arun` awaits them. Neither holds any rule of its own (`App.wait_for` and
`App.await_job`, `enqueue_rows` and `aenqueue_rows` are such pairs)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import TypeVar

Ask = TypeVar("Ask")
Answer = TypeVar("Answer")
Result = TypeVar("Result")

Steps = Generator[Ask, Answer, Result]


def run(steps: Generator[Ask, Answer, Result], do: Callable[[Ask], Answer]) -> Result:
    """Drive `steps`, answering each with `do(ask)`; its return value."""
    try:
        ask = next(steps)
        while True:
            ask = steps.send(do(ask))
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


async def arun(
    steps: Generator[Ask, Answer, Result], do: Callable[[Ask], Awaitable[Answer]]
) -> Result:
    """`run` for async code: each step's answer is awaited."""
    try:
        ask = next(steps)
        while True:
            ask = steps.send(await do(ask))
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
