"""A fork server for the crash-point sweeps: imports canonkit once, then for every
request line (JSON ``{"store", "op", "crash_at", "report"}``) forks a child that arms the
crash point (``mutations.arm``, the in-process form of CANONKIT_STORE_CRASH_AT), opens the
store and runs the operation. The reply line is ``{"exit": <child exit status>}``: 137 if
it crashed at that point, 0 if the operation finished first (the child then writes its
mutation count to ``report``)."""
from __future__ import annotations

import json
import os
import sys
import traceback

from canonkit.store import Store, mutations

OPS = {
    "repack": lambda s, arg: s.repack(grace_seconds=0),
    "repack-never": lambda s, arg: s.repack(deflate="never", grace_seconds=0),
    "gc": lambda s, arg: s.gc(grace_seconds=0),
    "put": lambda s, arg: s.put(bytes.fromhex(arg["data"]), form=arg["form"]),
    "set_ref": lambda s, arg: s.set_ref(arg["name"], arg["address"], expect=arg.get("expect")),
}


def main() -> None:
    for line in sys.stdin:
        req = json.loads(line)
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                mutations.arm(req["crash_at"])
                store = Store(req["store"], durable=True)
                OPS[req["op"]](store, req.get("arg", {}))
                with open(req["report"], "w") as fh:
                    fh.write(str(mutations.count()))
            except BaseException:  # noqa: BLE001 -- reported to the test as exit 1
                traceback.print_exc()
                code = 1
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"exit": os.waitstatus_to_exitcode(status)}), flush=True)


if __name__ == "__main__":
    main()
