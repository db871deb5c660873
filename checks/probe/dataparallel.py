"""DDP404: nn.DataParallel in use."""

from __future__ import annotations

from ddpdoctor.core.findings import Problem, Severity
from ddpdoctor.probe.records import telemetry as tm
from ddpdoctor.probe.run_model.loaded_run import RunModel
from ddpdoctor.core.registry import Skipped, check

from ddpdoctor.probe.words.wording import location, rank_list


@check("DDP404", "nn.DataParallel in use", Severity.WARNING)
def dataparallel(run: RunModel) -> list[Problem] | Skipped:
    """
    What it detects:
        A torch.nn.DataParallel was constructed (one finding per call site, naming the ranks
        that built one).

    Why it hurts:
        DataParallel runs one process that scatters each batch over the GPUs with threads,
        replicates the model every forward and gathers outputs on GPU 0: the GIL, the
        replication and GPU 0's extra memory make it slower than DDP even on one machine.
        Inside a DDP job it is worse: each rank would drive several GPUs on its own. PyTorch
        recommends DDP instead.

    How to fix:
        One process per GPU, each wrapping the model in DDP, started with torchrun:

            # torchrun --nproc-per-node=NUM_GPUS train.py
            dist.init_process_group("nccl")
            local_rank = int(os.environ["LOCAL_RANK"])
            torch.cuda.set_device(local_rank)
            model = DDP(model.to(local_rank), device_ids=[local_rank])   # not nn.DataParallel(model)
    """
    if not any(rank_run.records for rank_run in run.ranks.values()):
        return Skipped("no rank recorded telemetry")
    by_site: dict[object, list[int]] = {}
    sites = {}
    for rank, rank_run in sorted(run.ranks.items()):
        for use in rank_run.of(tm.DataParallelUse):
            key = (use.site.file, use.site.line) if use.site else None
            sites.setdefault(key, use.site)
            if rank not in by_site.setdefault(key, []):
                by_site[key].append(rank)
    problems = []
    for key, ranks in by_site.items():
        site = sites[key]
        where = f" at {site}" if site else ""
        problems.append(Problem(
            message=f"nn.DataParallel is constructed{where} on {rank_list(ranks)}",
            hint=("use DistributedDataParallel with one process per GPU (torchrun "
                  "--nproc-per-node=NUM_GPUS), not nn.DataParallel"),
            ranks=ranks,
            location=location(site),
            evidence={"site": str(site) if site else None},
        ))
    return problems
