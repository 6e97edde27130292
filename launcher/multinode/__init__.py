"""Building blocks for multi-node launches: hostfile, node selection, remote environment, runner commands,
and node identity. All torch-free; `launcher.multinode.backend_agreement` (which imports torch) is not
re-exported here.
"""

from __future__ import annotations

from launcher.multinode.addresses import Placement, place_node
from launcher.multinode.backend_claims import BackendClaim, disagreement
from launcher.multinode.errors import (
    HostfileError,
    MultinodeError,
    NodeIdentityError,
    RemoteEnvError,
    SelectionError,
)
from launcher.multinode.hostfile import HostSlots, parse_hostfile, parse_hostfile_text
from launcher.multinode.node_identity import NodeIdentity, node_identity
from launcher.multinode.node_table import node_table_env, parse_node_table
from launcher.multinode.remote_env import remote_env
from launcher.multinode.remote_shell import pdsh_shell_command, shell_command
from launcher.multinode.runners import (
    LaunchCommand,
    NodeArgv,
    openmpi_command,
    pdsh_command,
    slurm_command,
    ssh_commands,
)
from launcher.multinode.selection import NodeSpec, select_nodes
from launcher.multinode.slurm_nodelist import expand_nodelist

__all__ = [
    "BackendClaim",
    "HostSlots",
    "HostfileError",
    "LaunchCommand",
    "MultinodeError",
    "NodeArgv",
    "NodeIdentity",
    "NodeIdentityError",
    "NodeSpec",
    "Placement",
    "RemoteEnvError",
    "SelectionError",
    "disagreement",
    "expand_nodelist",
    "node_identity",
    "node_table_env",
    "openmpi_command",
    "parse_hostfile",
    "parse_hostfile_text",
    "parse_node_table",
    "pdsh_command",
    "pdsh_shell_command",
    "place_node",
    "remote_env",
    "select_nodes",
    "shell_command",
    "slurm_command",
    "ssh_commands",
]
