# Stands for mlfoundations/open_clip 89fb801 src/open_clip_train/train.py:593 (and zero_shot.py):
# non-leader ranks leave early only when sharded evaluation is OFF; the collectives sit under
# `if sharded_eval:`, where every rank is still present.
# expect: clean
import torch
import torch.distributed as dist


def evaluate(net, batches, sharded_eval):
    leader = dist.get_rank() == 0
    if not sharded_eval and not leader:
        return {}
    more = torch.ones(1)
    for batch in batches:
        if sharded_eval:
            dist.broadcast(more, src=0)
        net(batch)
    return {"done": True}


dist.init_process_group("gloo")
evaluate(torch.nn.Linear(4, 2), [torch.ones(1, 4)], sharded_eval=True)
