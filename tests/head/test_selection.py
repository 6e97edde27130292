"""Node selection with --include / --exclude / --num-nodes / --num-gpus."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from launcher.contract.hosts import HostSlots, NodeSpec
from launcher.errors import SelectionError
from launcher.head.selection import select_nodes

HOSTS = (HostSlots("h1", 4), HostSlots("h2", 2), HostSlots("h3", 1))


def test_no_filter_takes_every_slot_of_every_host_in_hostfile_order() -> None:
    assert select_nodes(HOSTS) == (NodeSpec("h1", (0, 1, 2, 3)), NodeSpec("h2", (0, 1)), NodeSpec("h3", (0,)))


@pytest.mark.parametrize(
    ("include", "expected"),
    [
        ("h2", (NodeSpec("h2", (0, 1)),)),
        ("h1:0,2", (NodeSpec("h1", (0, 2)),)),
        ("h3@h1:2,0", (NodeSpec("h1", (0, 2)), NodeSpec("h3", (0,)))),
        ("h1:1,1@h1:0", (NodeSpec("h1", (0, 1)),)),
        ("h2:1@h2", (NodeSpec("h2", (1,)),)),  # a slot named anywhere wins, as in DeepSpeed
    ],
)
def test_include_keeps_the_named_slots_sorted_in_hostfile_node_order(include: str, expected: tuple[NodeSpec, ...]) -> None:
    assert select_nodes(HOSTS, include=include) == expected


def test_include_host_0_2_gives_exactly_devices_0_2_and_two_processes() -> None:
    (node,) = select_nodes(HOSTS, include="h1:0,2")
    assert (",".join(map(str, node.slots)), node.nproc) == ("0,2", 2)


@pytest.mark.parametrize(
    ("exclude", "expected"),
    [
        ("h2", (NodeSpec("h1", (0, 1, 2, 3)), NodeSpec("h3", (0,)))),
        ("h1:0,3@h3", (NodeSpec("h1", (1, 2)), NodeSpec("h2", (0, 1)))),
        ("h3:0", (NodeSpec("h1", (0, 1, 2, 3)), NodeSpec("h2", (0, 1)))),
        ("h2:1@h2:1", (NodeSpec("h1", (0, 1, 2, 3)), NodeSpec("h2", (0,)), NodeSpec("h3", (0,)))),
    ],
)
def test_exclude_drops_the_named_slots_and_hosts_left_empty(exclude: str, expected: tuple[NodeSpec, ...]) -> None:
    assert select_nodes(HOSTS, exclude=exclude) == expected


def test_num_nodes_takes_the_first_nodes_and_num_gpus_the_first_slots() -> None:
    assert select_nodes(HOSTS, num_nodes=2, num_gpus=2) == (NodeSpec("h1", (0, 1)), NodeSpec("h2", (0, 1)))


@pytest.mark.parametrize(
    ("kwargs", "flag", "part", "words"),
    [
        ({"include": "h1", "exclude": "h2"}, "--include", "h1", "cannot be combined with --exclude"),
        ({"include": "h1", "num_nodes": 1}, "--include", "h1", "--num-nodes"),
        ({"exclude": "h1", "num_gpus": 1}, "--exclude", "h1", "--num-gpus"),
        ({"include": "h9"}, "--include", "h9", "not in the hostfile (h1, h2, h3)"),
        ({"exclude": "h1@h9:0"}, "--exclude", "h9:0", "not in the hostfile"),
        ({"include": "h1:4"}, "--include", "h1:4", "slots 0-3, not 4"),
        ({"include": "h3:1"}, "--include", "h3:1", "slots 0-0, not 1"),
        ({"include": "h1:"}, "--include", "h1:", "'' is not a slot number"),
        ({"include": "h1:0,,1"}, "--include", "h1:0,,1", "not a slot number"),
        ({"include": "h1:-1"}, "--include", "h1:-1", "'-1' is not a slot number"),
        ({"include": "h1:x"}, "--include", "h1:x", "'x' is not a slot number"),
        ({"include": "h1:0:1"}, "--include", "h1:0:1", "'0:1' is not a slot number"),
        ({"include": "h1@"}, "--include", "", "empty host name"),
        ({"include": "@h1"}, "--include", "", "empty host name"),
        ({"exclude": ":0"}, "--exclude", ":0", "empty host name"),
        ({"include": " h1"}, "--include", " h1", "not in the hostfile"),
        ({"exclude": "h1@h2@h3"}, "--exclude", "h1@h2@h3", "excludes every slot"),
        ({"num_nodes": 0}, "--num-nodes", "0", "at least 1"),
        ({"num_nodes": 4}, "--num-nodes", "4", "only 3 nodes"),
        ({"num_gpus": 0}, "--num-gpus", "0", "at least 1"),
        ({"num_gpus": 2}, "--num-gpus", "2", "host 'h3' has only 1 slots"),
    ],
)
def test_a_bad_selection_names_the_flag_and_the_bad_part(kwargs: dict, flag: str, part: str, words: str) -> None:
    with pytest.raises(SelectionError) as caught:
        select_nodes(HOSTS, **kwargs)
    assert (caught.value.flag, caught.value.part) == (flag, part)
    assert str(caught.value).startswith(f"{flag} {part!r}: ")
    assert words in str(caught.value)


@pytest.mark.timeout(30)
def test_a_host_named_again_and_again_keeps_each_slot_once_without_quadratic_work() -> None:
    hosts = [HostSlots("a", 4096), HostSlots("b", 1)]
    (node,) = select_nodes(hosts, include="@".join(["a:4095,0", "a"] * 5000))
    assert node.slots == (0, 4095)
    nodes = select_nodes(hosts, exclude="@".join(["a:1"] * 10000 + ["b"]))
    assert nodes == (NodeSpec("a", (0, *range(2, 4096))),)


def test_an_unknown_host_names_only_the_first_few_of_a_long_hostfile() -> None:
    hosts = [HostSlots(f"h{index}", 1) for index in range(10000)]
    with pytest.raises(SelectionError, match=r"not in the hostfile \(h0, h1, h2, h3, h4, \.\.\. 10000 hosts\)"):
        select_nodes(hosts, include="zz")


@given(st.text(), st.booleans())
def test_any_filter_text_gives_nodes_or_a_selection_error(text: str, include: bool) -> None:
    try:
        nodes = select_nodes(HOSTS, include=text) if include else select_nodes(HOSTS, exclude=text)
    except SelectionError:
        return
    assert all(node.slots for node in nodes)
    assert [node.host for node in nodes] == [h.host for h in HOSTS if h.host in {n.host for n in nodes}]


@pytest.mark.slow  # imports DeepSpeed's runner, and with it torch
@settings(deadline=None, max_examples=300)
@given(st.lists(st.tuples(st.sampled_from(["h1", "h2", "h3"]), st.lists(st.integers(0, 3), max_size=3)),
                min_size=1, max_size=4), st.booleans())
def test_include_and_exclude_select_what_deepspeeds_own_parser_selects(
    parts: list[tuple[str, list[int]]], include: bool
) -> None:
    from deepspeed.launcher.runner import parse_resource_filter

    pool = {entry.host: list(range(entry.slots)) for entry in HOSTS}
    text = "@".join(host if not slots else f"{host}:{','.join(map(str, slots))}" for host, slots in parts)
    flag = {"include_str": text} if include else {"exclude_str": text}
    try:
        theirs = {host: tuple(slots) for host, slots in parse_resource_filter(pool, **flag).items()}
    except ValueError:  # a slot the host does not have: both refuse
        with pytest.raises(SelectionError):
            select_nodes(HOSTS, **{("include" if include else "exclude"): text})
        return
    try:
        ours = select_nodes(HOSTS, **{("include" if include else "exclude"): text})
    except SelectionError as error:
        assert not theirs, f"DeepSpeed selected {theirs}; ours refused: {error}"
        return
    assert {node.host: node.slots for node in ours} == theirs
    assert [node.host for node in ours] == list(theirs)
