"""Child process that runs llama.cpp's OpenAI-compatible server (through xllamacpp).

Run as `python -m cotplan.backends._serve --model PATH --port N ...` by `LocalModel`. A separate
process keeps a native crash from taking the caller down, lets the caller kill it cleanly, and
lets tests simulate a crash. It exits when its parent dies, so no server is ever left behind.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ctx", type=int, default=4096)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--poll", type=int, default=0)
    parser.add_argument("--ubatch", type=int, default=0)
    parser.add_argument("--lora", default="")
    parser.add_argument("--reasoning-format", choices=("auto", "none", "deepseek"), default="auto")
    parser.add_argument("--chat-template-file", default="")
    args = parser.parse_args()

    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.hostnames = ["127.0.0.1"]  # loopback only, never beyond
    params.port = args.port
    params.n_parallel = args.parallel
    params.n_ctx = args.ctx * args.parallel  # llama.cpp splits n_ctx across slots
    params.cache_prompt = True
    if args.ubatch > 0:
        params.n_ubatch = args.ubatch
    # Each keep-alive client connection holds one HTTP thread; llama.cpp's default pool is sized
    # by cores, so two clients on a 2-core machine could starve a third.
    params.n_threads_http = max(16, 4 * args.parallel)
    # llama.cpp's worker threads busy-wait between steps by default (poll 50). On a small
    # machine shared with other work that collapses throughput when a spinning thread is
    # descheduled; poll 0 makes them sleep instead.
    params.cpuparams.poll = args.poll
    params.cpuparams_batch.poll = args.poll
    if args.threads > 0:
        params.cpuparams.n_threads = args.threads
        params.cpuparams_batch.n_threads = args.threads
    if args.lora:
        params.lora_adapters = [xllamacpp.CommonAdapterLoraInfo(args.lora, 1.0)]
    if args.chat_template_file:
        # llama.cpp reads a template file into `chat_template` itself (`--chat-template-file`);
        # the parameter takes the text. Only the jinja engine runs the reasoning parser.
        with open(args.chat_template_file, encoding="utf-8") as template:
            params.chat_template = template.read()
        params.use_jinja = True
    formats = xllamacpp.common_reasoning_format
    params.reasoning_format = {
        "auto": formats.COMMON_REASONING_FORMAT_AUTO,
        "none": formats.COMMON_REASONING_FORMAT_NONE,
        "deepseek": formats.COMMON_REASONING_FORMAT_DEEPSEEK,
    }[args.reasoning_format]
    server = xllamacpp.Server(params)  # returns once the model is loaded and the port is bound

    parent = os.getppid()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    print(f"cotplan-serve ready on {server.listening_address}", file=sys.stderr, flush=True)
    while not stop.wait(0.5):
        if os.getppid() != parent:  # orphaned: the caller died without stopping us
            break
    # Exiting the interpreter while native server threads run can hang; leave at once.
    os._exit(0)


if __name__ == "__main__":
    main()
