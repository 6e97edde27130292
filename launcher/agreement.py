"""The agreement: every member of a job (the node launchers on the engine path, the ranks on the direct path of
several nodes) checks that it resolved the compile backend node 0 did, and runs node 0's torch, Python and
accelerator kind, in a few store calls each, however many members there are (docs/ARCHITECTURE.md).

Member 0 publishes its `BackendClaim`, with its round and member count; every other member reads them before it
counts itself in (one that counts another job size hands member 0's round its own claim as the verdict, so every
member names the sizes) and holds its number (a second launcher given the same node rank finds it held, and
says by whom, before it counts in), compares its own with it and, on a difference, writes
its own claim with its number (`NodeClaim`), and that claim as the verdict at once; each counts itself in with one
`add`, and the last one in writes the verdict that the others wait for, where none is written yet: `agreed`, or a
differing claim. On a difference every member words the one
line naming both claims itself and raises `ClaimsDiffer` with it, and first waits (up to the timeout) until every
member has read the verdict, so that the one hosting the store does not leave first.

What another member wrote is untrusted (docs/RELIABILITY.md, "Nothing another node writes is trusted"): it is
decoded defensively (`BackendClaim.decode`), a wrong shape is an `UntrustedRecord` naming the writer, and the
writer's text reaches the line escaped and shortened (`launcher.escaped.short_line`).

A leaf, torch-free: the store is any object with torch's `Store` methods (set, get, add, check, wait).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar

from launcher.contract.resolved_backend import BackendClaim, ClaimFormatError, NodeClaim
from launcher.escaped import short_line

__all__ = ["agree", "disagreement", "ClaimsDiffer", "UntrustedRecord", "AgreementTimeout", "MemberTaken", "FACTS"]

Decoded = TypeVar("Decoded")
_ARRIVALS = "accel/agreement/arrivals"
# Member 0's round, member count and claim, `b"<generation> <world size> <claim>"`: every member reads it before it
# counts itself in, so that one that counts another size of job names the sizes on every member, not a timeout.
_FIRST = "accel/agreement/first"
_AGREED = b"agreed"
# Who holds a member's number in a round (`<round>/holder/<number>`), `HOST (pid N)`: set by the first to claim it
# (compare_set), read by a second.
_MAX_HOLDER_BYTES = 200
# The facts beside the backend that must be the same on every member: (claim field, as a line names it, what to do).
_SAME_SOFTWARE = "run one torch, Python and accelerator kind on every node of a job"
FACTS = (
    ("torch", "torch", _SAME_SOFTWARE),
    ("python", "Python", _SAME_SOFTWARE),
    ("accelerator", "accelerator kinds", _SAME_SOFTWARE),
    ("world", "job sizes (ranks in all)", "give every node the same --nnodes and --nproc-per-node "
     "(ACCEL_LAUNCH_PATH=engine counts each node's own ranks at its rendezvous)"),
)
# How long the member that hosts the store waits for the others to read a verdict that stops the job.
_LEAVE_SECONDS = 10.0
# A wait that ends this much before its timeout ended because the store went, not because the time ran out.
_EARLY_SECONDS = 0.5


class ClaimsDiffer(Exception):
    """Two members of one job resolved different compile backends, or run different torch, Python or devices."""


class UntrustedRecord(Exception):
    """What a member wrote to the store for the agreement is not what accel-launch writes."""

    def __init__(self, writer: str, problem: str) -> None:
        self.writer, self.problem = writer, problem
        super().__init__(f"what {writer} wrote to the rendezvous store for the backend agreement is not what "
                         f"accel-launch writes: {problem}; run the same accel-launch on every node")


class AgreementTimeout(Exception):
    """A member did not see what it waited for within the timeout; the message says what."""


class MemberTaken(Exception):
    """Another process already holds this member's number in the job: two launchers were given one node rank."""

    def __init__(self, node_rank: int | str, holder: str) -> None:
        self.node_rank, self.holder = node_rank, holder
        super().__init__(f"node rank {node_rank} is already held by {holder}: another node launcher was given "
                         f"--node-rank {node_rank} and joined this job first; give each node its own --node-rank")

    def for_node(self, node_rank: int | str) -> MemberTaken:
        """The same, naming the node rank (a rank on the direct path holds its own number, not its node's)."""
        return MemberTaken(node_rank, self.holder)


def agree(store: Any, rank: int, world_size: int, claim: BackendClaim, timeout: timedelta,
          member: str = "node", holder: str | None = None) -> None:
    """Agree with the other members on `claim` as `member` `rank` of `world_size`; raise ClaimsDiffer when one
    differs, UntrustedRecord on bytes of the wrong shape, AgreementTimeout when a wait runs out, MemberTaken when
    another process holds `rank` (`holder` names this one: default the claim's host and this process).

    At most 8 store calls per member when all agree (12 when not). A static rendezvous hands every round the
    same store, so each agreement gets its own keys from the count of arrivals (`world_size` per round); a member
    holds its number in member 0's round.
    """
    differing, holder = None, holder or f"{claim.host} (pid {os.getpid()})"
    if rank == 0:
        first, generation = claim, (store.add(_ARRIVALS, 1) - 1) // world_size
        _hold(store, _keys(generation), rank, holder)
        store.set(_FIRST, f"{generation} {world_size} ".encode() + claim.encode())
    else:
        _wait(store, _FIRST, timeout, f"{member} 0's claim")
        first_generation, first_size, first = _first(store.get(_FIRST), f"{member} 0")
        if first_size != world_size:  # before the number is held: another size numbers its members otherwise
            _differ_in_size(store, _keys(first_generation), rank, claim, first, first_size, world_size, member)
        _hold(store, _keys(first_generation), rank, holder)  # in member 0's round, which a second one cannot skew
        generation = (store.add(_ARRIVALS, 1) - 1) // world_size
        if disagreement(first, rank, claim, member) is not None:
            differing = NodeClaim(rank, claim).encode()
            store.set(_keys(generation)("mismatch"), differing)
            store.set(_keys(generation)("verdict"), differing)  # at once: no member waits out its timeout
    key = _keys(generation)
    if store.add(key("in"), 1) == world_size and not store.check([key("verdict")]):
        if differing is None and store.check([key("mismatch")]):
            differing = store.get(key("mismatch"))
        verdict = _AGREED if differing is None else differing
        store.set(key("verdict"), verdict)
    elif differing is not None:
        verdict = differing
    else:
        _wait(store, key("verdict"), timeout, f"all {world_size} {member}s count in", key("in"))
        verdict = store.get(key("verdict"))
    if verdict == _AGREED:
        return
    try:
        message = _mismatch_line(first, verdict, world_size, member)
    finally:
        _leave_together(store, key("read"), key("all_read"), world_size,
                        min(timeout, timedelta(seconds=_LEAVE_SECONDS)))
    raise ClaimsDiffer(message)


def _hold(store: Any, key: Callable[[str], str], rank: int, holder: str) -> None:
    """Hold member number `rank` of the round `key` names for `holder`, or raise MemberTaken naming who holds it (its
    text untrusted: escaped and shortened). A store without compare_set (a program's own, in Python) is not asked."""
    mine = holder.encode("utf-8", "replace")[:_MAX_HOLDER_BYTES]
    try:
        held = bytes(store.compare_set(key(f"holder/{rank}"), "", mine))
    except (AttributeError, NotImplementedError):
        return
    if held != mine:
        raise MemberTaken(rank, short_line(held[:_MAX_HOLDER_BYTES].decode("utf-8", "replace")))


def _keys(generation: int) -> Callable[[str], str]:
    return f"accel/agreement/{generation}/{{}}".format


def _first(raw: bytes, writer: str) -> tuple[int, int, BackendClaim]:
    """Member 0's generation, member count and claim; UntrustedRecord when the bytes are not what it writes."""
    fields = raw.split(b" ", 2)
    if len(fields) != 3 or not all(field.isdigit() and len(field) <= 12 for field in fields[:2]):
        raise UntrustedRecord(writer, f"its claim does not start with its round and size: {short_line(repr(raw[:80]))}")
    return int(fields[0]), int(fields[1]), _decoded(BackendClaim.decode, fields[2], writer)


def _differ_in_size(store: Any, key: Callable[[str], str], rank: int, claim: BackendClaim, first: BackendClaim,
                    first_size: int, world_size: int, member: str) -> None:
    """This member counts another job size than member 0: hand member 0's round this member's claim as the verdict
    (so member 0's side ends with the same line at once) and raise ClaimsDiffer naming both sizes."""
    differing = NodeClaim(rank, claim).encode()
    store.set(key("mismatch"), differing)
    store.set(key("verdict"), differing)
    raise ClaimsDiffer(disagreement(first, rank, claim, member) or _sizes_line(first_size, rank, world_size, member))


def _sizes_line(first_size: int, rank: int, world_size: int, member: str) -> str:
    return (f"the nodes count different job sizes: {member} 0 counts {first_size} {member}s, {member} {rank} counts "
            f"{world_size}; {FACTS[-1][2]}")


def disagreement(first: BackendClaim, rank: int, claim: BackendClaim, member: str = "node") -> str | None:
    """None when `member` `rank`'s claim has member 0's (`first`) backend and facts, else the one line that names
    both, each member's text escaped and shortened."""
    where0, where = f"{member} 0 on {short_line(first.host)}", f"{member} {rank} on {short_line(claim.host)}"
    if claim.backend != first.backend:
        return (
            f"the nodes resolved different compile backends: {where0} has {_quoted(first.backend)} "
            f"(from {short_line(first.source)}), {where} has {_quoted(claim.backend)} "
            f"(from {short_line(claim.source)}); give every node the same --compile-backend or ACCEL_COMPILE_BACKEND"
        )
    for field, label, remedy in FACTS:
        ours, theirs = getattr(first, field), getattr(claim, field)
        if ours != theirs:
            return (f"the nodes run different {label}: {where0} has {_quoted(ours)}, {where} has {_quoted(theirs)}; "
                    f"{remedy}")
    return None


def _decoded(decode: Callable[[bytes], Decoded], raw: bytes, writer: str) -> Decoded:
    """`decode(raw)`, its ClaimFormatError an UntrustedRecord naming `writer`."""
    try:
        return decode(raw)
    except ClaimFormatError as exc:
        raise UntrustedRecord(writer, str(exc)) from None


def _mismatch_line(first: BackendClaim, verdict: bytes, world_size: int, member: str) -> str:
    """The line for a verdict that is a differing member's claim; UntrustedRecord when it is not one."""
    writer = f"the {member} that differed from {member} 0"
    found = _decoded(NodeClaim.decode, verdict, writer)
    other_size = found.claim.world != first.world  # its number counts in another job's size
    if found.node <= 0 or (found.node >= world_size and not other_size):
        raise UntrustedRecord(writer, f"it names {member} {found.node}, not one of {member}s 1 to {world_size - 1}")
    message = disagreement(first, found.node, found.claim, member)
    if message is None:
        raise UntrustedRecord(f"{member} {found.node}", f"it says it differs from {member} 0 but claims the same")
    return message


def _quoted(text: str) -> str:
    """`text` in quotes, as a backend name is shown: escaped and shortened."""
    return f"'{short_line(text)}'"


def _wait(store: Any, key: str, timeout: timedelta, what: str, counter: str | None = None) -> None:
    """Wait for `key`; when `timeout` runs out, raise saying `what` was awaited (and `counter`'s count); when the
    store goes before that (its host ended), say after how long."""
    started = time.monotonic()
    try:
        store.wait([key], timeout)
    except RuntimeError:  # DistStoreError included: the wait ran out, or the store is gone
        waited, seconds = time.monotonic() - started, timeout.total_seconds()
        counted = f" ({_count(store, counter)} did)" if counter is not None else ""
        if waited >= seconds - _EARLY_SECONDS:
            raise AgreementTimeout(f"the backend agreement did not see {what} within {seconds:g} s{counted}") from None
        raise AgreementTimeout(f"the backend agreement did not see {what}{counted}: the rendezvous store was gone "
                               f"after {waited:.1f} s of the {seconds:g} s wait (the member that hosts it ended, or "
                               "its host was lost)") from None


def _count(store: Any, counter: str) -> str:
    """The counter's value, or words for when the store cannot be read."""
    try:
        return str(store.add(counter, 0))
    except RuntimeError:
        return "an unknown number"


def _leave_together(store: Any, read: str, all_read: str, world_size: int, timeout: timedelta) -> None:
    """Count this member as having read the verdict; wait until every member has (the store's host included)."""
    try:
        if store.add(read, 1) == world_size:
            store.set(all_read, b"1")
        else:
            store.wait([all_read], timeout)
    except RuntimeError:  # DistStoreError included: a peer that hosted the store may be gone already
        pass
