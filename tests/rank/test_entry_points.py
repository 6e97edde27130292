"""The entry points a rank keys its facts on are the ones importlib.metadata finds."""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

import pytest

from launcher.rank.node_facts_cache import entry_point_pairs


def metadata_pairs(group: str, path: list[str]) -> list[list[str]]:
    found = importlib.metadata.distributions(path=path)
    return sorted([ep.name, ep.value] for dist in found for ep in dist.entry_points if ep.group == group)


def plant(site: Path, name: str, entry_points: str, suffix: str = ".dist-info") -> None:
    info = site / f"{name}-1.0{suffix}"
    info.mkdir(parents=True)
    (info / ("METADATA" if suffix == ".dist-info" else "PKG-INFO")).write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(entry_points)


@pytest.mark.parametrize("group", ["torch_dynamo_backends", "console_scripts"])
def test_this_environment_gives_what_importlib_metadata_gives(group: str) -> None:
    assert entry_point_pairs(group) == metadata_pairs(group, sys.path)


def test_planted_distributions_of_every_shape_give_what_importlib_metadata_gives(tmp_path: Path) -> None:
    site = tmp_path / "site"
    plant(site, "one", "[torch_dynamo_backends]\nfast = one.backends:compile\n\n[console_scripts]\nx = one:main\n")
    plant(site, "two", "# a comment\n[torch_dynamo_backends]\n  slow=two:compile [extra]\n\n"
                       "other = two.more:compile\n[ torch_dynamo_backends ]\nspaced = two:not_this_group\n",
          suffix=".egg-info")
    plant(site, "three", "[console_scripts]\nfast = three:main\n")
    (site / "four-1.0.dist-info").mkdir()  # no entry_points.txt at all
    path = [str(site), str(tmp_path / "missing")]

    pairs = entry_point_pairs("torch_dynamo_backends", path)

    assert pairs == metadata_pairs("torch_dynamo_backends", path)
    assert pairs == [["fast", "one.backends:compile"], ["other", "two.more:compile"], ["slow", "two:compile [extra]"]]
