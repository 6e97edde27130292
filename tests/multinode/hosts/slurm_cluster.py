"""A real Slurm cluster on the first two hosts of `hosts.Cluster` (`slurm_hosts`): one munged (its own key and socket), slurmctld
on hosta, a slurmd on each host, private state and spool folders, ports 16817/16818 inside the namespaces.

Clients (sbatch, srun, squeue, scancel) find it through SLURM_CONF. The hosts' names resolve inside the
daemons' own mount namespaces (a hosts file shown as /etc/hosts there), as on any Slurm cluster; jobs run
under slurmd and see the same.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tests.multinode.hosts.hosts import Cluster, Host

SLURM_NODES = 2
PROGRAMS = ("munged", "slurmctld", "slurmd", "srun", "sbatch", "squeue", "scancel", "sinfo")


@dataclass(frozen=True)
class Slurm:
    """The cluster's config file and the environment its clients need."""

    conf: Path
    folder: Path

    @property
    def env(self) -> dict[str, str]:
        return {"SLURM_CONF": str(self.conf)}


def slurm_missing() -> str | None:
    """Why Slurm cannot run here, or None."""
    missing = [program for program in PROGRAMS if shutil.which(program) is None]
    return f"needs {', '.join(missing)} (Debian's slurm-wlm and munge, installed by .ci/run)" if missing else None


def slurm_hosts(cluster: Cluster) -> list[Host]:
    """The hosts Slurm runs on: the first two, hosta with slurmctld."""
    return cluster.hosts[:SLURM_NODES]


def start_slurm(cluster: Cluster, folder: Path) -> Slurm:
    """Start munged, slurmctld and both slurmds; wait until both nodes are idle."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    hosts_file = folder / "hosts"
    hosts_file.write_text("127.0.0.1 localhost\n" + "".join(f"{h.addr} {h.name}\n" for h in slurm_hosts(cluster)))
    key = folder / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    socket_path = folder / "munge.socket"
    conf = _write_conf(cluster, folder, socket_path)
    slurm = Slurm(conf, folder)
    env = {**os.environ, **slurm.env}
    hosta = cluster.hosts[0]
    hosta.spawn(["munged", "-F", "--force", f"--socket={socket_path}", f"--key-file={key}",
                 f"--pid-file={folder / 'munged.pid'}", f"--log-file={folder / 'munged.log'}",
                 f"--seed-file={folder / 'munged.seed'}"], log=folder / "munged.out")
    _wait(lambda: socket_path.exists(), "munged did not start", folder)
    hosta.spawn(["slurmctld", "-D", "-i"], str(hosts_file), env, folder / "slurmctld.out")
    for host in slurm_hosts(cluster):
        host.spawn(["slurmd", "-D", "-N", host.name], str(hosts_file), env, folder / f"slurmd-{host.name}.out")
    _wait(lambda: _idle(cluster, slurm) == SLURM_NODES, "the slurmds did not register", folder)
    return slurm


def _write_conf(cluster: Cluster, folder: Path, socket_path: Path) -> Path:
    for sub in ("state", *(f"spool-{host.name}" for host in slurm_hosts(cluster))):
        (folder / sub).mkdir()
    names = ",".join(host.name for host in slurm_hosts(cluster))
    nodes = "".join(f"NodeName={host.name} NodeAddr={host.addr} CPUs={os.cpu_count()} State=UNKNOWN\n"
                    for host in slurm_hosts(cluster))
    conf = folder / "slurm.conf"
    conf.write_text(
        f"ClusterName=accelhosts\nSlurmctldHost={cluster.hosts[0].name}({cluster.hosts[0].addr})\n"
        "SlurmUser=root\nSlurmdUser=root\nSlurmctldPort=16817\nSlurmdPort=16818\n"
        f"AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket={socket_path}\n"
        f"StateSaveLocation={folder / 'state'}\nSlurmdSpoolDir={folder / 'spool-%n'}\n"
        f"SlurmctldPidFile={folder / 'slurmctld.pid'}\nSlurmdPidFile={folder / 'slurmd-%n.pid'}\n"
        f"SlurmctldLogFile={folder / 'slurmctld.log'}\nSlurmdLogFile={folder / 'slurmd-%n.log'}\n"
        "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nSelectType=select/linear\n"
        "ReturnToService=2\nMpiDefault=none\nSchedulerType=sched/builtin\nJobCompType=jobcomp/none\n"
        "AccountingStorageType=accounting_storage/none\nJobAcctGatherType=jobacct_gather/none\n"
        "SlurmctldTimeout=30\nSlurmdTimeout=30\nInactiveLimit=0\nKillWait=5\nMinJobAge=2\n"
        f"PlugStackConfig={folder / 'plugstack.conf'}\n"
        f"{nodes}PartitionName=test Nodes={names} Default=YES MaxTime=INFINITE State=UP\n"
    )
    (folder / "plugstack.conf").write_text("")
    return conf


def _idle(cluster: Cluster, slurm: Slurm) -> int:
    done = subprocess.run(cluster.hosts[0].argv(["sinfo", "-h", "-N", "-o", "%N %t"]), capture_output=True,
                          text=True, env={**os.environ, **slurm.env})
    return sum(1 for line in done.stdout.splitlines() if line.split()[-1:] == ["idle"])


def _wait(ready, what: str, folder: Path, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not ready():
        if time.monotonic() > deadline:
            logs = "".join(f"--- {p.name}\n{p.read_text()[-1500:]}" for p in sorted(folder.glob("*.out")))
            raise RuntimeError(f"{what}\n{logs}")
        time.sleep(0.2)
