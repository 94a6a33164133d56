#!/usr/bin/env python3
"""Records the JSON-RPC frames an ACP agent exchanges with a client into fixtures/acp/<agent>/.

    python3 scripts/record-acp.py kilo     BIN      # the real `kilo acp`, against the mock LLM
    python3 scripts/record-acp.py opencode BIN      # the real `opencode acp`, same
    python3 scripts/record-acp.py capable           # fixtures/acp/capable_agent.py

Each scenario is one `<name>.jsonl` file: one frame a line, `{"dir": "out"|"in", "msg": …}`
(`out`: client to agent). The client offers what bb-bridge offers at `initialize` and answers
the agent's requests as the bridge does when the user approves (permissions: the first
allow option; file reads and writes inside the project; terminals run by /bin/sh;
elicitations accepted with {"name": "Ada"}). The world's temp paths are replaced by
/tmp/acp-capture, so re-recording changes only what the agent changed. Needs python3;
kilo/opencode need the engine binary (scripts/engine.sh prints Kilo's).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MOCK = os.path.join(REPO, "crates/kilo/mock_llm.py")
CAPS = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True,
        "session": {"notices": {}, "compaction": {}, "configOptions": {"boolean": {}}},
        "elicitation": {"form": {}, "url": {}}}
PLACEHOLDER = "/tmp/acp-capture"


class Agent:
    def __init__(self, argv, cwd, env, root):
        self.root = root
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.frames = []
        self.lock = threading.Lock()
        self.cond = threading.Condition()
        self.responses = {}
        self.next = 0
        self.cwd = cwd
        self.terminals = {}
        threading.Thread(target=self.reader, daemon=True).start()

    def scrub(self, msg):
        return json.loads(json.dumps(msg).replace(self.root, PLACEHOLDER))

    def send(self, msg):
        with self.lock:
            self.frames.append({"dir": "out", "msg": self.scrub(msg)})
            self.proc.stdin.write((json.dumps(msg) + "\n").encode())
            self.proc.stdin.flush()

    def reader(self):
        for raw in self.proc.stdout:
            try:
                msg = json.loads(raw)
            except ValueError:
                continue
            with self.lock:
                self.frames.append({"dir": "in", "msg": self.scrub(msg)})
            if "method" in msg and "id" in msg:
                threading.Thread(target=self.serve, args=(msg,), daemon=True).start()
            elif "method" not in msg:
                with self.cond:
                    self.responses[msg.get("id")] = msg
                    self.cond.notify_all()

    def serve(self, msg):
        m, p, i = msg["method"], msg.get("params", {}), msg["id"]
        ok = lambda r: self.send({"jsonrpc": "2.0", "id": i, "result": r})
        err = lambda c, t: self.send({"jsonrpc": "2.0", "id": i, "error": {"code": c, "message": t}})
        if m == "session/request_permission":
            allow = next(o for o in p["options"] if o["kind"].startswith("allow"))
            ok({"outcome": {"outcome": "selected", "optionId": allow["optionId"]}})
        elif m == "fs/read_text_file":
            try:
                ok({"content": open(p["path"]).read()})
            except OSError as e:
                err(-32002, str(e))
        elif m == "fs/write_text_file":
            with open(p["path"], "w") as f:
                f.write(p["content"])
            ok({})
        elif m == "terminal/create":
            tid = "term-%d" % (len(self.terminals) + 1)
            self.terminals[tid] = subprocess.run(["/bin/sh", "-c", p["command"]], cwd=self.cwd,
                                                 capture_output=True, text=True)
            ok({"terminalId": tid})
        elif m == "terminal/wait_for_exit":
            ok({"exitCode": self.terminals[p["terminalId"]].returncode})
        elif m == "terminal/output":
            r = self.terminals[p["terminalId"]]
            ok({"output": r.stdout + r.stderr, "truncated": False, "exitStatus": {"exitCode": r.returncode}})
        elif m in ("terminal/release", "terminal/kill"):
            ok({})
        elif m == "elicitation/create":
            ok({"action": "accept", "content": {"name": "Ada"}})
        else:
            err(-32601, "method not found")

    def call(self, method, params, timeout=120):
        self.next += 1
        i = self.next
        self.send({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
        end = time.time() + timeout
        with self.cond:
            while i not in self.responses:
                if time.time() > end:
                    raise SystemExit("%s timed out" % method)
                self.cond.wait(0.1)
            return self.responses.pop(i)

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def take(self):
        time.sleep(0.5)
        with self.lock:
            frames, self.frames = self.frames, []
        return frames

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def world(flavor, root):
    for sub in ["project", "home", "xdg/config/kilo", "xdg/config/opencode", "xdg/data", "xdg/state", "xdg/cache"]:
        os.makedirs(os.path.join(root, sub), exist_ok=True)
    port_file = os.path.join(root, "mock.port")
    mock = subprocess.Popen(["python3", MOCK, "--host", "127.0.0.1", "--port", "0", "--port-file", port_file,
                             "--delay", "0.05", "--slow-seconds", "30"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 20
    while not os.path.exists(port_file) or not open(port_file).read().strip():
        if time.time() > deadline or mock.poll() is not None:
            mock.kill()
            raise SystemExit("the mock LLM did not start")
        time.sleep(0.05)
    port = int(open(port_file).read())
    model = lambda ctx: {"name": "Mock", "tool_call": True, "limit": {"context": ctx, "output": 4096}}
    cfg = {"model": "mock/mock-model", "small_model": "mock/mock-model", "autoupdate": False, "share": "disabled",
           "provider": {"mock": {"npm": "@ai-sdk/openai-compatible", "name": "Mock LLM",
                                 "options": {"baseURL": "http://127.0.0.1:%d/v1" % port, "apiKey": "mock-key"},
                                 "models": {"mock-model": model(128000), "other-model": model(64000)}}},
           "permission": {"bash": "ask", "edit": "ask"}, "enabled_providers": ["mock"], "snapshot": False}
    with open(os.path.join(root, "xdg/config", flavor, flavor + ".json"), "w") as f:
        json.dump(cfg, f)
    env = {"PATH": os.environ["PATH"], "HOME": root + "/home", "XDG_CONFIG_HOME": root + "/xdg/config",
           "XDG_DATA_HOME": root + "/xdg/data", "XDG_STATE_HOME": root + "/xdg/state",
           "XDG_CACHE_HOME": root + "/xdg/cache"}
    prefix = flavor.upper()
    env[prefix + "_TELEMETRY_LEVEL"] = "off"
    for flag in ["AUTOUPDATE", "MODELS_FETCH", "DEFAULT_PLUGINS", "SHARE", "LSP_DOWNLOAD", "CLAUDE_CODE",
                 "SESSION_INGEST"]:
        env["%s_DISABLE_%s" % (prefix, flag)] = "1"
    project = os.path.join(root, "project")
    with open(os.path.join(project, "hello.txt"), "w") as f:
        f.write("hello world\n")
    return mock, project, env


def q(obj):
    return urllib.parse.quote(json.dumps(obj, separators=(",", ":")), safe="")


def save(out, name, frames):
    with open(os.path.join(out, name + ".jsonl"), "w") as f:
        for fr in frames:
            f.write(json.dumps(fr, sort_keys=True) + "\n")
    print("wrote %s/%s.jsonl (%d frames)" % (out, name, len(frames)))


def begin(a, project, out):
    """initialize + session/new, saved as initialize_new; the session id and a prompt sender."""
    init = a.call("initialize", {"protocolVersion": 1, "clientCapabilities": CAPS,
                                 "clientInfo": {"name": "bb-bridge", "version": "record"}})
    assert "result" in init, init
    sid = a.call("session/new", {"cwd": project, "mcpServers": []})["result"]["sessionId"]
    save(out, "initialize_new", a.take())
    return sid, lambda text: a.call("session/prompt", {"sessionId": sid,
                                                       "prompt": [{"type": "text", "text": text}]})


def record_engine(flavor, bin_path, out):
    root = tempfile.mkdtemp(prefix="acp-rec-")
    project = os.path.join(root, "project")
    mock, a = None, None
    try:
        mock, project, env = world(flavor, root)
        a = Agent([bin_path, "acp"], project, env, root)
        sid, prompt = begin(a, project, out)
        prompt("Say it MOCK:text:hello%20from%20acp")
        save(out, "text_turn", a.take())
        prompt("Run it MOCK:bash:echo%20zebra42")
        save(out, "permission_bash", a.take())
        prompt("Write it MOCK:write:notes.txt")
        save(out, "edit_write", a.take())
        prompt("Read it MOCK:tool:read:" + q({"filePath": os.path.join(project, "hello.txt")}))
        save(out, "read_tool", a.take())
        prompt("Plan it MOCK:tool:todowrite:" + q({"todos": [
            {"content": "first", "status": "in_progress", "priority": "high", "id": "1"},
            {"content": "second", "status": "pending", "priority": "low", "id": "2"}]}))
        save(out, "todo_tool", a.take())
        a.call("session/set_config_option", {"sessionId": sid, "configId": "model", "value": "mock/other-model"})
        prompt("Say it MOCK:text:on%20the%20other%20model")
        save(out, "config_model_switch", a.take())
        a.call("session/list", {"cwd": project})
        a.call("session/close", {"sessionId": sid})
        a.call("session/resume", {"sessionId": sid, "cwd": project})
        a.call("session/load", {"sessionId": sid, "cwd": project, "mcpServers": []})
        a.call("session/delete", {"sessionId": sid})
        save(out, "session_lifecycle", a.take())
        t = threading.Thread(target=prompt, args=("Go MOCK:slow",))
        t.start()
        time.sleep(1.5)
        a.notify("session/cancel", {"sessionId": sid})
        t.join(60)
        save(out, "cancel", a.take())
    finally:
        if a:
            a.stop()
        if mock:
            mock.kill()
        shutil.rmtree(root, ignore_errors=True)


def record_capable(out):
    root = tempfile.mkdtemp(prefix="acp-rec-")
    project = os.path.join(root, "project")
    os.makedirs(project)
    with open(os.path.join(project, "hello.txt"), "w") as f:
        f.write("hello world\n")
    agent = os.path.join(REPO, "fixtures/acp/capable_agent.py")
    a = Agent(["python3", agent], project, {"PATH": os.environ["PATH"]}, root)
    try:
        _, prompt = begin(a, project, out)
        prompt("FAKE:thought:thinking%20it%20over FAKE:plan FAKE:title:Fixing%20the%20bug FAKE:usage FAKE:mode:plan FAKE:config")
        save(out, "session_facts", a.take())
        prompt("FAKE:notice:warning:Rate%20limited FAKE:compact FAKE:subagent FAKE:unknown")
        save(out, "notices_compaction_subagent", a.take())
        prompt("FAKE:read:%s FAKE:write:%s:new%%20text FAKE:terminal:echo%%20term42 FAKE:elicit"
               % (os.path.join(project, "hello.txt"), os.path.join(project, "out.txt")))
        save(out, "client_capabilities", a.take())
    finally:
        a.stop()
        shutil.rmtree(root, ignore_errors=True)


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("kilo", "opencode", "capable"):
        raise SystemExit(__doc__)
    flavor = sys.argv[1]
    out = os.path.join(REPO, "fixtures/acp", flavor)
    os.makedirs(out, exist_ok=True)
    if flavor == "capable":
        record_capable(out)
    else:
        if len(sys.argv) < 3:
            raise SystemExit("give the %s binary" % flavor)
        record_engine(flavor, os.path.abspath(sys.argv[2]), out)


if __name__ == "__main__":
    main()
