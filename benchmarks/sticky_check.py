"""Several replicas behind nginx with sticky sessions: does each student stay on their replica?

    python benchmarks/sticky_check.py [--replicas 2] [--students 12]

Starts `--replicas` Attention Lab servers on loopback (one per core, the same cookie secret) and
nginx with deploy/nginx.conf (only its upstream addresses and port replaced), then, through
nginx, each simulated student (benchmarks/classroom_sim's protocol client, which keeps cookies
like a browser):
  1. opens the app and the Simple attention page, presses Next (state in its session);
  2. drops its websocket and reconnects with its session id, as the frontend does after a network
     blip: the SAME session must answer (same session id: the reconnect reached its replica);
  3. uploads a file through the checkpoint uploader (the upload goes over HTTP, not the
     websocket): the app must answer with its "Checkpoint not loaded" message for that file,
     which only the replica holding the session can do.
It also counts the websockets each replica holds (the students must be spread over them).
Needs nginx on the PATH (Debian: apt-get install nginx-light). Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.classroom_sim.client import Client  # noqa: E402
from benchmarks.classroom_sim.stats import Stats  # noqa: E402
from benchmarks.harness import StreamlitServer, free_port, wait_healthy  # noqa: E402


def replica(core: int, secret: str, log: Path) -> StreamlitServer:
    """One app server in hosted mode, pinned to one core, sharing the cookie secret of the others."""
    env = {"ATTENTION_LAB_HOSTED": "1", "STREAMLIT_SERVER_COOKIE_SECRET": secret}
    return StreamlitServer(env=env, cores={core % os.cpu_count()}, log=log)


def nginx_config(ports: list[int], listen: int, tmp: Path, sticky: bool = True) -> Path:
    text = (ROOT / "deploy" / "nginx.conf").read_text()
    if not sticky:  # round robin: the negative control, the check must fail then
        text = text.replace("hash $cookie__streamlit_xsrf consistent;", "")
    servers = "\n".join(f"        server 127.0.0.1:{p};" for p in ports)
    text = text.replace("        server app:8501;   # a name with several addresses = every replica "
                        "of the compose service", servers)
    assert servers in text, "deploy/nginx.conf's upstream line changed; update this check"
    text = text.replace("listen 8080;", f"listen 127.0.0.1:{listen};")
    text = text.replace("events {}", f"pid {tmp}/nginx.pid;\nerror_log {tmp}/error.log;\nevents {{}}")
    text = text.replace("http {", f"http {{\n    access_log off;\n    client_body_temp_path {tmp};\n"
                        f"    proxy_temp_path {tmp};")
    path = tmp / "nginx.conf"
    path.write_text(text)
    return path


def websockets_per_port(ports: list[int]) -> dict[int, int]:
    """Established connections into each replica's port (nginx -> replica)."""
    counts = {p: 0 for p in ports}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local_port = int(fields[1].rsplit(":", 1)[1], 16)
            if fields[3] == "01" and local_port in counts:  # 01 = ESTABLISHED
                counts[local_port] += 1
    return counts


async def one_student(i: int, base: str, result: dict) -> None:
    stats = Stats()
    client = Client(f"student {i}", base, stats, random.Random(i))
    entry = {"student": i}
    try:
        await client.connect("")
        first_id = client.session_id
        await client.goto("Simple attention")
        nxt = client.widgets("button", "Next")
        if nxt:
            await client.click(nxt[0])
        # 2. a network blip: the websocket drops, the frontend reconnects with its session id
        await client.close()
        await client.connect(client.url_path, reuse_session=True)
        entry["same_session_after_reconnect"] = client.session_id == first_id
        # 3. an upload over HTTP must reach the replica that holds this session
        await client.goto("Train the names GPT")
        uploader = client.widgets("file_uploader", "checkpoint")
        await client.upload(uploader[0], "not-a-model.pt", b"this is not a checkpoint")
        entry["upload_answered"] = any("Checkpoint not loaded" in t for t in client.texts("alert"))
    except Exception as exc:  # noqa: BLE001
        entry["error"] = f"{type(exc).__name__}: {str(exc)[:160]}"
    entry["errors"] = stats.errors[:3]
    result["students"].append(entry)
    result["clients"].append(client)


async def drive(base: str, n: int, result: dict, ports: list[int]) -> None:
    await asyncio.gather(*(one_student(i, base, result) for i in range(n)))
    result["websockets_per_replica"] = list(websockets_per_port(ports).values())
    for client in result.pop("clients"):
        await client.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="sticky sessions behind nginx")
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--students", type=int, default=12)
    parser.add_argument("--no-sticky", action="store_true",
                        help="plain round robin (a control: the check must then fail)")
    args = parser.parse_args(argv)
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(nginx).exists():
        print(json.dumps({"skipped": "nginx is not installed"}))
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="attention-lab-sticky-"))
    secret = os.urandom(16).hex()
    replicas = [replica(i, secret, tmp / f"replica{i}.log") for i in range(args.replicas)]
    ports = [r.port for r in replicas]
    listen = free_port()
    proxy = None
    result: dict = {"replicas": args.replicas, "students": [], "clients": []}
    try:
        for r in replicas:
            r.start()
        proxy = subprocess.Popen([nginx, "-c", str(nginx_config(ports, listen, tmp, sticky=not args.no_sticky)), "-g",
                                  "daemon off;"], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{listen}"
        wait_healthy(base)
        asyncio.run(asyncio.wait_for(drive(base, args.students, result, ports), 300))
    finally:
        if proxy is not None:
            proxy.terminate()
        for r in replicas:
            r.stop()
    students = result["students"]
    summary = {
        "replicas": args.replicas, "sticky": not args.no_sticky,
        "students": len(students),
        "same_session_after_reconnect": sum(bool(s.get("same_session_after_reconnect")) for s in students),
        "upload_answered": sum(bool(s.get("upload_answered")) for s in students),
        "websockets_per_replica": result.get("websockets_per_replica"),
        "errors": sum(1 for s in students if s.get("error") or s.get("errors")),
    }
    summary["pass"] = (summary["same_session_after_reconnect"] == summary["upload_answered"]
                       == len(students) and summary["errors"] == 0
                       and all(c > 0 for c in summary["websockets_per_replica"] or [0]))
    for s in students:
        if s.get("error") or s.get("errors"):
            print("error:", s)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
