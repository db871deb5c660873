"""The collective smoke test as it runs on one node: a supervisor that starts this node's ranks,
and the code of each rank. Shipped like facts.py (ssh stdin, or a local child), so a node needs
Python and torch - the job's own environment - and not ddpdoctor. Hence: standard library plus
torch (imported only inside a rank), Python 3.7 syntax, no `from __future__` import.

Supervisor (`_node_main`): starts `nproc` rank processes, each in its own process group, with
RANK / LOCAL_RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT set as torchrun would; collects what
they report; kills and reaps all of them at its deadline, or as soon as its stdin closes
(ddpdoctor finished or died); prints one marked JSON line.

Rank (`_rank_main`), in this order:
1. connect to the TCPStore at MASTER_ADDR:MASTER_PORT (rank 0 hosts it, unless ddpdoctor's store
   mode already does);
2. pairwise node tests: local rank 0 of each node, in rounds of disjoint node pairs, forms a
   2-rank group of its own through the store and times an all-reduce: a broken or slow node
   shows in every pair it is part of and in no other;
3. when every pair worked: the whole world - every node, every process - in one process group,
   a correctness all-reduce, then all-reduces at a few sizes with their algorithm bandwidth (the
   parent turns it into NCCL's busbw). Each size's time is agreed on by all ranks (a MAX all-reduce), so
   all of them stop the size ladder at the same point and no rank waits in a collective the
   others skipped.
Each step prints one marked event line as it ends, so a rank killed at the deadline still says
how far it got.
"""

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time

NODE_MARKER = "DDPDOCTOR-COLLECTIVE "
EVENT_MARKER = "DDPDOCTOR-RANK "
# A rank's program arrives as one JSON line on stdin; stdin then stays open (EOF = stop).
LINE_BOOTSTRAP = "import sys,json;exec(json.loads(sys.stdin.readline()))"


def _first_line(exc):
    # c10d errors carry a C++ stack after the first line, and source paths inside it
    # ("[/__w/pytorch/.../pair.cc:152] "); people need the words.
    import re
    text = str(exc).strip().splitlines()
    line = re.sub(r"\[[^\]\s]*\.(?:cc|cpp|h|hpp):\d+\] ?", "", text[0] if text else "")
    return ("%s: %s" % (type(exc).__name__, line.replace("$0", ""))).strip()[:400]


# ---------------------------------------------------------------- rank


_STARTED = time.monotonic()


def _emit(event):
    event.setdefault("t", round(time.monotonic() - _STARTED, 3))  # seconds since the rank started
    sys.stdout.write(EVENT_MARKER + json.dumps(event) + "\n")
    sys.stdout.flush()


def _watchdog(deadline):
    """A rank never outlives its deadline, nor its supervisor (its stdin closes when that dies)."""
    def watch():
        stdin = sys.stdin.fileno()
        while time.monotonic() < deadline:
            try:
                ready, _, _ = select.select([stdin], [], [], max(0.0, min(1.0, deadline - time.monotonic())))
                if ready and not os.read(stdin, 4096):
                    os._exit(3)
            except (OSError, ValueError):
                time.sleep(0.2)
        _emit({"phase": "deadline"})
        os._exit(4)

    threading.Thread(target=watch, name="ddpdoctor-deadline", daemon=True).start()


def _rank_main(params):
    began = time.monotonic()
    deadline = began + float(params["deadline_s"])
    _watchdog(deadline)
    rank, local_rank = int(params["rank"]), int(params["local_rank"])
    _emit({"phase": "started"})
    try:
        import datetime
        import torch
        import torch.distributed as dist
    except Exception as exc:  # noqa: BLE001 - reported as this rank's failure
        _emit({"phase": "import", "error": _first_line(exc)})
        return
    _emit({"phase": "imported", "seconds": round(time.monotonic() - began, 3), "torch": torch.__version__})

    def left(cap=None):
        remaining = max(1.0, deadline - time.monotonic() - 1.0)
        return datetime.timedelta(seconds=min(cap, remaining) if cap else remaining)

    backend = params["backend"]
    device = None
    if backend == "nccl":
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    try:
        t0 = time.monotonic()
        store = dist.TCPStore(params["master_addr"], int(params["master_port"]), None,
                              bool(params["host_store"]) and rank == 0, left(),
                              wait_for_workers=False)
        store = dist.PrefixStore(params["prefix"], store)
        _emit({"phase": "store", "seconds": round(time.monotonic() - t0, 3)})
    except Exception as exc:  # noqa: BLE001
        _emit({"phase": "store", "error": _first_line(exc)})
        return
    node = int(params["node_rank"])
    nnodes = int(params["nnodes"])
    if local_rank == 0 and nnodes > 1:
        failed = _pairs(params, store, dist, torch, device, node, left)
        store.set("pairs-done/%d" % node, "failed" if failed else "ok")
    try:
        store.wait(["pairs-done/%d" % n for n in range(nnodes)] if nnodes > 1 else [], left())
        verdicts = [store.get("pairs-done/%d" % n).decode() for n in range(nnodes)] if nnodes > 1 else []
    except Exception as exc:  # noqa: BLE001
        _emit({"phase": "world", "skipped": "not every node finished its pair tests: %s" % _first_line(exc)})
        _leave(params, store, rank, left)
        _exit()
    if "failed" in verdicts:
        _emit({"phase": "world", "skipped": "pair tests failed"})
    else:
        _world(params, store, dist, torch, device, rank, left)
        _emit({"phase": "done", "seconds": round(time.monotonic() - began, 3)})
    _leave(params, store, rank, left)
    _exit()


def _exit():
    # Everything is reported: leave now, without running destructors of groups that may be
    # stuck (a failed Gloo pair) - a rank must never hang on its way out.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _leave(params, store, rank, left):
    """Rank 0 may host the store: it stays until every rank is through with it."""
    try:
        store.add("finished", 1)
        if rank == 0 and params["host_store"]:
            world = int(params["world_size"])
            while store.add("finished", 0) < world and left().total_seconds() > 1.0:
                time.sleep(0.05)
    except Exception:  # noqa: BLE001 - the others are gone already
        pass


def _pair_group(params, store, dist, torch, name, index, timeout):
    prefixed = dist.PrefixStore(name, store)
    if params["backend"] == "nccl":
        if not hasattr(dist, "ProcessGroupNCCL"):
            raise RuntimeError("this torch has no NCCL")
        options = dist.ProcessGroupNCCL.Options()
        options._timeout = timeout
        return dist.ProcessGroupNCCL(prefixed, index, 2, options)
    # Reads GLOO_SOCKET_IFNAME, else the address the hostname resolves to: what the job does.
    return dist.ProcessGroupGloo(prefixed, index, 2, timeout)


def _pairs(params, store, dist, torch, device, node, left):
    """This node's pair tests; True when one failed."""
    failed = False
    size = int(params["pair_bytes"]) // 4
    for number, pairs in enumerate(params["rounds"]):
        pair = next((p for p in pairs if node in p), None)
        if pair is None:
            continue
        a, b = pair
        event = {"phase": "pair", "round": number, "pair": [a, b]}
        try:
            # Meet the partner first: it may still be in an earlier round with a broken node, and
            # that wait must not count against this pair's own timeout.
            store.set("ready/%d/%d" % (number, node), "1")
            store.wait(["ready/%d/%d" % (number, b if node == a else a)], left())
        except Exception as exc:  # noqa: BLE001
            event.update({"error": "the partner never came: %s" % _first_line(exc), "wall": 0.0})
            failed = True
            _emit(event)
            continue
        began = time.monotonic()
        limit = float(params["pair_timeout"])
        box = {}
        # In a thread: Gloo's connect can wait several times its timeout (it retries), and a
        # pair must cost at most `limit`. A thread left stuck in Gloo dies with the process.
        worker = threading.Thread(target=_pair_test, name="ddpdoctor-pair", daemon=True,
                                  args=(params, store, dist, torch, device, number, a, b, node, size, box, left))
        worker.start()
        gave_up = "pair-failed/%d/%d-%d" % (number, a, b)
        end = began + limit + 1.0
        while worker.is_alive() and time.monotonic() < end:
            worker.join(0.1)
            try:
                if store.check([gave_up]):
                    box.setdefault("error", "the other end failed: %s" % store.get(gave_up).decode())
                    break
            except Exception:  # noqa: BLE001 - the store is gone: the deadline decides
                pass
        if "error" in box and not box["error"].startswith("the other end failed"):
            try:
                store.set(gave_up, box["error"])  # so the other end stops waiting for us
            except Exception:  # noqa: BLE001
                pass
        if "error" in box or "seconds" not in box:
            event["error"] = box.get("error") or (
                "the pair group formed, but %d KiB did not cross within %.0f s" % (size * 4 >> 10, limit)
                if box.get("formed") else "no answer within %.0f s (the connection was never made)" % limit)
            failed = True
        else:
            seconds = box["seconds"]
            event.update({"seconds": round(seconds, 6), "bytes": size * 4,
                          "busbw": round(size * 4 / seconds, 1) if seconds > 0 else None})
        event["wall"] = round(time.monotonic() - began, 3)
        _emit(event)
    return failed


def _pair_test(params, store, dist, torch, device, number, a, b, node, size, box, left):
    try:
        group = _pair_group(params, store, dist, torch, "pair/%d/%d-%d" % (number, a, b),
                            0 if node == a else 1, left(float(params["pair_timeout"])))
        box["formed"] = True
        tensor = torch.ones(size, device=device)
        began = time.monotonic()
        group.allreduce([tensor]).wait()  # warm-up: connections are made lazily
        _sync(torch, device)
        iters = _agreed_iters(group, torch, device, time.monotonic() - began, float(params["pair_timeout"]),
                              int(params["pair_iters"]))
        t0 = time.monotonic()
        for _ in range(iters):
            group.allreduce([tensor]).wait()
        _sync(torch, device)
        box["seconds"] = (time.monotonic() - t0) / iters
        box["group"] = group  # keep it alive: destroying a Gloo group can block
    except Exception as exc:  # noqa: BLE001 - a broken pair is a result, not a crash
        box["error"] = _first_line(exc)


def _agreed_iters(group, torch, device, warm, limit, most):
    """How many timed all-reduces fit in half the pair's time, on a slow link too (a 2 MB/s link
    moves 1 MiB in ~0.5 s: five of them and the warm-up overran the limit and read as a pair that
    never connected). Both ends must run the same count or one waits alone, so the count comes from
    the warm-up time the two summed, the same float on both."""
    both = torch.tensor([warm], dtype=torch.float64, device=device)
    group.allreduce([both]).wait()
    _sync(torch, device)
    mean = float(both.item()) / 2
    return max(1, min(most, int(limit * 0.5 / mean) if mean > 0 else most))


def _sync(torch, device):
    if device is not None:
        torch.cuda.synchronize(device)


def _world(params, store, dist, torch, device, rank, left):
    world = int(params["world_size"])
    t0 = time.monotonic()
    try:
        dist.init_process_group(params["backend"], store=dist.PrefixStore("world", store), rank=rank,
                                world_size=world, timeout=left())
    except Exception as exc:  # noqa: BLE001
        _emit({"phase": "world-init", "error": _first_line(exc)})
        return
    _emit({"phase": "world-init", "seconds": round(time.monotonic() - t0, 3)})
    try:
        probe = torch.full((4,), float(rank + 1), device=device)
        dist.all_reduce(probe)
        expected = world * (world + 1) / 2.0
        got = probe.tolist()
        if any(abs(v - expected) > 1e-3 for v in got):
            _emit({"phase": "check", "error": "all-reduce returned %s, expected %s" % (got[0], expected)})
            return
        _emit({"phase": "check"})
        cap = float(params["size_cap_s"])
        sizes = [int(n) for n in params["sizes"]]
        for index, nbytes in enumerate(sizes):
            tensor = torch.ones(int(nbytes) // 4, device=device)
            dist.all_reduce(tensor)  # warm-up
            _sync(torch, device)
            t1 = time.monotonic()
            for _ in range(int(params["iters"])):
                dist.all_reduce(tensor)
            _sync(torch, device)
            mine = (time.monotonic() - t1) / int(params["iters"])
            slowest = torch.tensor([mine], device=device)
            dist.all_reduce(slowest, op=dist.ReduceOp.MAX)  # every rank takes the same decision
            seconds = float(slowest.item())
            algbw = nbytes / seconds if seconds > 0 else 0.0
            _emit({"phase": "size", "bytes": int(nbytes), "seconds": round(seconds, 6),
                   "algbw": round(algbw, 1)})  # busbw: the parent's (core/torch_names.bus_factor)
            following = sizes[index + 1] if index + 1 < len(sizes) else None
            if following is not None and seconds * following / nbytes > cap:
                break  # the next size would take too long on this network; same verdict on every rank
    except Exception as exc:  # noqa: BLE001
        _emit({"phase": "allreduce", "error": _first_line(exc)})
    finally:
        try:
            dist.destroy_process_group()
        except Exception:  # noqa: BLE001 - the report is what matters now
            pass


# ---------------------------------------------------------------- node supervisor


def _reader(stream, sink):
    try:
        for raw in iter(stream.readline, b""):
            sink.append(raw.decode("utf-8", "replace").rstrip("\n"))
    except (OSError, ValueError):
        pass


def _kill(proc):
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            proc.kill()
    try:
        proc.wait(timeout=3)
    except subprocess.TimeoutExpired:
        pass


def _node_main(params):
    """Start this node's ranks, wait for them (never past the deadline), print their results."""
    began = time.monotonic()
    deadline = began + float(params["deadline_s"])
    source = params.pop("source")
    nproc = int(params["nproc"])
    ranks = []
    try:
        for local_rank in range(nproc):
            rank = int(params["rank_offset"]) + local_rank
            env = dict(os.environ)
            env.update({"RANK": str(rank), "LOCAL_RANK": str(local_rank), "WORLD_SIZE": str(params["world_size"]),
                        "LOCAL_WORLD_SIZE": str(nproc), "GROUP_RANK": str(params["node_rank"]),
                        "NODE_RANK": str(params["node_rank"]), "MASTER_ADDR": params["master_addr"],
                        "MASTER_PORT": str(params["master_port"]), "PYTHONUNBUFFERED": "1",
                        "TORCH_CPP_LOG_LEVEL": env.get("TORCH_CPP_LOG_LEVEL", "ERROR")})
            mine = dict(params, rank=rank, local_rank=local_rank,
                        deadline_s=max(1.0, deadline - time.monotonic() - 1.0))
            program = source + "\n_rank_main(json.loads(%r))\n" % json.dumps(mine)
            proc = subprocess.Popen([sys.executable, "-c", LINE_BOOTSTRAP], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                    start_new_session=True)
            proc.stdin.write((json.dumps(program) + "\n").encode())
            proc.stdin.flush()
            out, err = [], []
            for stream, sink in ((proc.stdout, out), (proc.stderr, err)):
                threading.Thread(target=_reader, args=(stream, sink), daemon=True).start()
            ranks.append((rank, local_rank, proc, out, err))
        _wait(ranks, deadline)
    finally:
        killed = [r for r, _, p, _, _ in ranks if p.poll() is None]
        for _, _, proc, _, _ in ranks:
            _kill(proc)
    results = []
    for rank, local_rank, proc, out, err in ranks:
        events = []
        for line in out:
            if line.startswith(EVENT_MARKER):
                try:
                    events.append(json.loads(line[len(EVENT_MARKER):]))
                except ValueError:
                    pass
        results.append({"rank": rank, "local_rank": local_rank, "events": events,
                        "exit_code": proc.returncode, "killed": rank in killed,
                        "stderr": [ln for ln in err if ln.strip()][-6:]})
    sys.stdout.write(NODE_MARKER + json.dumps({"node_rank": params["node_rank"], "ranks": results,
                                               "seconds": round(time.monotonic() - began, 3)}) + "\n")
    sys.stdout.flush()


def _wait(ranks, deadline):
    """Until every rank has exited, the deadline passes, or our stdin closes."""
    stdin = sys.stdin.fileno()
    watch_stdin = True
    while any(p.poll() is None for _, _, p, _, _ in ranks) and time.monotonic() < deadline:
        if watch_stdin:
            try:
                ready, _, _ = select.select([stdin], [], [], 0.1)
            except (OSError, ValueError):
                ready, watch_stdin = [], False
            if ready:
                try:
                    if not os.read(stdin, 4096):
                        return  # ddpdoctor closed our stdin: stop now
                except OSError:
                    watch_stdin = False
        else:
            time.sleep(0.1)
