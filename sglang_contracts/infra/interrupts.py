"""How a one-run process meets the signals that interrupt it.

Ctrl-C (SIGINT) and the ENDING_SIGNALS (SIGTERM: a CI job cancelled, `timeout`; SIGHUP: the
terminal or ssh session closed; SIGQUIT: Ctrl-\\ at a terminal) each raise, in the main thread, a
KeyboardInterrupt: the run lets its workers go on the way out and ends with the status 128 + the
signal's number (left to their defaults, the resource tracker warned of leaked semaphores:
campaign 9, R25, campaign 13, R10). A signal the process was started ignoring (nohup) stays
ignored. The first one met makes the process ignore every later one: a second signal a few
milliseconds after the first (Ctrl-C twice; `timeout` signals the run, then its whole group) was
raised again inside the ending run's exit, a traceback, or a hang when it cut the killing of the
workers short (campaign 14, R02). Ignored by a handler that does nothing, not by SIG_IGN: a second
signal already caught when the first one's handler ran finds a handler still, where SIG_IGN made
CPython raise "OSError: Signal 15 ignored due to race condition" (campaign 15, R10).
"""

from __future__ import annotations

import signal
from typing import NoReturn

from sglang_contracts.infra.process_exit import exit_without_teardown

ENDING_SIGNALS = ("SIGTERM", "SIGHUP", "SIGQUIT")
INTERRUPTED = 130  # 128 + SIGINT


class Terminated(KeyboardInterrupt):
    """One of ENDING_SIGNALS, met as an interrupt is."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.status = 128 + signum  # as a shell tells of a process the signal ended


def interrupt_numbers() -> set[int]:
    """SIGINT's number and ENDING_SIGNALS' on this system (SIGHUP and SIGQUIT are not on Windows)."""
    return {getattr(signal, name) for name in ("SIGINT", *ENDING_SIGNALS) if hasattr(signal, name)}


def meet_interrupts() -> None:
    """Install the handlers (module docstring) for the signals not ignored."""
    for number in interrupt_numbers():
        if signal.getsignal(number) in (signal.SIG_DFL, signal.default_int_handler):
            signal.signal(number, _interrupted)


def _interrupted(signum: int, frame: object) -> NoReturn:
    _ignore_later_interrupts()
    raise KeyboardInterrupt if signum == signal.SIGINT else Terminated(signum)


def _ignore_later_interrupts() -> None:
    for number in interrupt_numbers():
        if signal.getsignal(number) is not signal.SIG_IGN:  # one the process was started ignoring stays so
            signal.signal(number, _met_already)


def _met_already(signum: int, frame: object) -> None:
    """A signal after the first: the run is ending already."""


def interrupt_behind(error: BaseException) -> KeyboardInterrupt | None:
    """The interrupt that an error stands for, if one does: a signal met while a class was made
    (an import) comes out as "RuntimeError: Error calling __set_name__" whose cause is the
    interrupt (campaign 15, R10)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def leave_at_interrupt() -> None:
    """For a process that serves (the language server), whose framework takes a KeyboardInterrupt
    for a request to stop and then waits for the check at work in its threads (35-46 s on a
    160-file workspace, then status 0: campaign 14, R03): an interrupt ends it at once, with the
    signal's status, as an interrupted run ends (infra/process_exit.py)."""
    for number in interrupt_numbers():
        if signal.getsignal(number) in (signal.SIG_DFL, signal.default_int_handler, _interrupted):
            signal.signal(number, _leave)


def _leave(signum: int, frame: object) -> NoReturn:
    _ignore_later_interrupts()
    exit_without_teardown(128 + signum, interrupted=True)


def interrupted_status(interrupt: KeyboardInterrupt) -> int:
    """The exit status of a run that `interrupt` ended."""
    return interrupt.status if isinstance(interrupt, Terminated) else INTERRUPTED


def interrupted_statuses() -> set[int]:
    """The statuses interrupted_status gives."""
    return {128 + number for number in interrupt_numbers()}
