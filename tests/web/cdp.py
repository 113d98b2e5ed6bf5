"""cdp.py: a standard-library-only driver for headless Chromium over the Chrome DevTools Protocol (CDP).

What it is: the browser driver of the web build's tests: Browser launches `chromium --headless=new` with
software WebGL2 and drives one page (navigate, evaluate, wait_for, click, key/type, drop_files, screenshot,
the console and exception lists); serve(folder) is a quiet local HTTP server for the page under test.
What it is not: a general automation library (one page, no frames, no network interception), nor a test
(tests/web/test_cdp_selftest.py proves it).
Protocol: https://chromedevtools.github.io/devtools-protocol/ . With --remote-debugging-pipe chromium reads
commands on fd 3 and writes answers and events on fd 4, each a JSON text followed by a NUL byte. Every wait
has a timeout and raises CDPError naming what it waited for; Browser.close() (also on leaving `with`, on an
exception, at interpreter exit) kills chromium's process group, reaps it and removes the temporary profile.
"""
import atexit
import base64
import collections
import contextlib
import fcntl
import functools
import http.server
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

FLAGS = ["--headless=new", "--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
         "--remote-debugging-pipe", "--no-first-run", "--no-default-browser-check"]

# Runs in the child before chromium: moves the two pipe ends to fds 3 and 4 (no preexec_fn, which is not
# safe with threads and could clobber subprocess's own error pipe), then execs chromium.
_TRAMPOLINE = """import os, sys
r, w = int(sys.argv[1]), int(sys.argv[2])
os.dup2(r, 3); os.dup2(w, 4); os.close(r); os.close(w)
try:
    os.execv(sys.argv[3], sys.argv[3:])
except OSError as e:
    sys.stderr.write("cdp.py: cannot run %s: %s\\n" % (sys.argv[3], e)); sys.exit(127)
"""

# key name (also its DOM `key` and `code`) -> (windowsVirtualKeyCode, text) for Input.dispatchKeyEvent
SPECIAL_KEYS = {"Enter": (13, "\r"), "Tab": (9, ""), "Backspace": (8, ""), "Escape": (27, ""), "Delete": (46, ""),
                "Home": (36, ""), "End": (35, ""), "ArrowLeft": (37, ""), "ArrowUp": (38, ""),
                "ArrowRight": (39, ""), "ArrowDown": (40, "")}
_PUNCT = {" ": ("Space", 32), ".": ("Period", 190), ",": ("Comma", 188), "-": ("Minus", 189),
          "=": ("Equal", 187), "/": ("Slash", 191), ";": ("Semicolon", 186), "'": ("Quote", 222),
          "[": ("BracketLeft", 219), "]": ("BracketRight", 221), "\\": ("Backslash", 220),
          "`": ("Backquote", 192)}


class CDPError(RuntimeError):
    """Anything the driver cannot do: launch, a protocol error, a timeout, a dead browser."""


class JSError(CDPError):
    """A JavaScript exception thrown by evaluate()'s expression; the message is its text."""


# A console message (level: log, info, warning, error, debug, ...) or an exception (level: exception).
Message = collections.namedtuple("Message", "level text")


def find_chromium():
    """/usr/bin/chromium, else chromium or chromium-browser on PATH, else None."""
    if os.access("/usr/bin/chromium", os.X_OK):
        return "/usr/bin/chromium"
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _remote_text(obj):
    if "value" in obj:
        return obj["value"] if isinstance(obj["value"], str) else json.dumps(obj["value"])
    return obj.get("unserializableValue") or obj.get("description") or obj.get("type", "")


class Browser:
    """One headless chromium with one page; the page methods are on the Browser itself.

    with Browser() as b: b.navigate(url); b.evaluate("1 + 1")
    """

    def __init__(self, chromium=None, timeout=30.0, extra_args=()):
        self.timeout = timeout
        self.console, self.exceptions = [], []
        self._proc, self._closed, self._dead, self._fds, self._tmp, self._reader = None, False, None, [], None, None
        self._ids, self._cond, self._send_lock = itertools.count(1), threading.Condition(), threading.Lock()
        self._responses, self._events, self._seq, self._session = {}, collections.deque(maxlen=10000), 0, None
        path = chromium or find_chromium()
        if not path:
            raise CDPError("cannot launch chromium: none found (/usr/bin/chromium, chromium(-browser) on PATH)")
        resolved = path if os.sep in path else shutil.which(path)
        if not resolved or not os.path.isfile(resolved) or not os.access(resolved, os.X_OK):
            raise CDPError(f"cannot launch chromium: {path} is not an executable file")
        atexit.register(self.close)
        try:
            self._launch(resolved, list(extra_args))
            target = self._call("Target.createTarget", {"url": "about:blank"}, session=False)
            self._session = self._call("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True},
                                       session=False)["sessionId"]
            for domain in ("Page", "Runtime", "Log"):
                self._call(domain + ".enable")
            self._call("Page.setLifecycleEventsEnabled", {"enabled": True})
        except BaseException:
            self.close()
            raise

    def _launch(self, path, extra_args):
        self._tmp = tempfile.mkdtemp(prefix="cdp-chromium-")
        cmd_r, cmd_w = os.pipe()     # we write commands, chromium reads them on fd 3
        out_r, out_w = os.pipe()     # chromium writes on fd 4, we read
        # child ends far above 4 so that the trampoline's dup2 onto 3 and 4 cannot clobber one another
        child_r = fcntl.fcntl(cmd_r, fcntl.F_DUPFD_CLOEXEC, 10)
        child_w = fcntl.fcntl(out_w, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(cmd_r)
        os.close(out_w)
        self._fds, self._wfd, self._rfd = [cmd_w, out_r], cmd_w, out_r
        argv = [sys.executable, "-I", "-S", "-c", _TRAMPOLINE, str(child_r), str(child_w), path] + FLAGS + \
            [f"--user-data-dir={os.path.join(self._tmp, 'profile')}"] + extra_args + ["about:blank"]
        try:
            with open(os.path.join(self._tmp, "stderr.log"), "wb") as log:
                self._proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                              pass_fds=(child_r, child_w), start_new_session=True)
        finally:
            os.close(child_r)
            os.close(child_w)
        self._reader = threading.Thread(target=self._read_loop, name="cdp-reader", daemon=True)
        self._reader.start()

    def _read_loop(self):
        pending = []   # the pieces of a message not yet ended by its NUL
        with contextlib.suppress(OSError):
            while chunk := os.read(self._rfd, 1 << 20):
                *ended, rest = chunk.split(b"\0")
                for i, part in enumerate(ended):
                    self._dispatch(b"".join(pending + [part]) if i == 0 else part)
                pending = [rest] if ended else pending + [rest]
        with self._cond:
            self._dead = self._dead or "chromium closed its DevTools pipe (it exited or crashed)"
            self._cond.notify_all()

    def _dispatch(self, raw):
        try:
            msg = json.loads(raw)
        except ValueError:
            return
        method, params = msg.get("method"), msg.get("params", {})
        if method == "Runtime.consoleAPICalled":
            self.console.append(Message(params.get("type", "log"),
                                        " ".join(_remote_text(a) for a in params.get("args", []))))
        elif method == "Log.entryAdded":
            entry = params.get("entry", {})
            self.console.append(Message(entry.get("level", "info"), entry.get("text", "")))
        elif method == "Runtime.exceptionThrown":
            d = params.get("exceptionDetails", {})
            self.exceptions.append(Message("exception", d.get("exception", {}).get("description")
                                           or d.get("text", "")))
        elif method == "Inspector.targetCrashed":
            self._dead = "the page crashed (Inspector.targetCrashed)"
        with self._cond:
            if "id" in msg:
                self._responses[msg["id"]] = msg
            else:
                self._seq += 1
                self._events.append((self._seq, msg))
            self._cond.notify_all()

    def _stderr_tail(self, lines=15):
        try:
            with open(os.path.join(self._tmp, "stderr.log"), "rb") as f:
                tail = f.read()[-4000:].decode("utf-8", "replace").splitlines()[-lines:]
        except OSError:
            return ""
        return "; chromium's stderr ends:\n  " + "\n  ".join(tail) if tail else ""

    def _wait(self, ready, what, timeout):
        """Waits under self._cond until ready() is not None; returns it. Raises CDPError naming `what`."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                value = ready()
                if value is not None:
                    return value
                if self._dead:
                    raise CDPError(f"{self._dead}, while waiting for {what}{self._stderr_tail()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise CDPError(f"timed out after {timeout:g} s waiting for {what}{self._stderr_tail(5)}")
                self._cond.wait(min(left, 0.5))

    def _send(self, msg):
        data = json.dumps(msg).encode() + b"\0"
        with self._send_lock:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(self._wfd, view):]
            except OSError as e:
                raise CDPError(f"cannot send {msg.get('method')} to chromium: {e}{self._stderr_tail()}")

    def _call(self, method, params=None, session=True, timeout=None):
        if self._closed:
            raise CDPError(f"{method}: the browser is closed")
        msg = {"id": next(self._ids), "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self._session
        self._send(msg)
        answer = self._wait(lambda: self._responses.pop(msg["id"], None),
                            f"chromium to answer {method}", timeout or self.timeout)
        if "error" in answer:
            raise CDPError(f"{method} failed: {answer['error'].get('message')} {answer['error'].get('data', '')}")
        return answer.get("result", {})

    def _wait_event(self, after, match, what, timeout):
        def ready():
            for seq, msg in self._events:
                if seq > after and msg.get("sessionId") == self._session and match(msg):
                    return msg
            return None
        return self._wait(ready, what, timeout or self.timeout)

    def choose_files(self, x, y, paths, timeout=None):
        """Clicks at (x, y), which must open the page's file chooser (an <input type=file> clicked by the
        page), and answers it with the files at paths (Page.fileChooserOpened, DOM.setFileInputFiles)."""
        self._call("Page.setInterceptFileChooserDialog", {"enabled": True})
        with self._cond:
            after = self._seq
        self.click(x, y)
        ev = self._wait_event(after, lambda m: m.get("method") == "Page.fileChooserOpened",
                              "the page to open a file chooser (Page.fileChooserOpened)", timeout)
        self._call("DOM.setFileInputFiles", {"files": [os.path.abspath(p) for p in paths],
                                             "backendNodeId": ev["params"]["backendNodeId"]})

    def navigate(self, url, timeout=None):
        """Loads url and waits for its load event; a network error raises CDPError."""
        with self._cond:
            after = self._seq
        result = self._call("Page.navigate", {"url": url}, timeout=timeout)
        if result.get("errorText"):
            raise CDPError(f"navigate({url}) failed: {result['errorText']}")
        loader = result.get("loaderId")
        if loader:   # none for a same-document navigation (a #fragment)
            self._wait_event(after, lambda m: m.get("method") == "Page.lifecycleEvent"
                             and m["params"].get("name") == "load" and m["params"].get("loaderId") == loader,
                             f"the load event of {url}", timeout)

    def set_viewport(self, width, height, dpr=1):
        """Sets the page's viewport in CSS pixels (screenshots come out width*dpr x height*dpr)."""
        self._call("Emulation.setDeviceMetricsOverride",
                   {"width": width, "height": height, "deviceScaleFactor": dpr, "mobile": False})

    def evaluate(self, js, timeout=None):
        """The value of the expression js (promises awaited), JSON-like; undefined is None.
        A thrown exception raises JSError with its text."""
        result = self._call("Runtime.evaluate", {"expression": js, "returnByValue": True,
                                                 "awaitPromise": True, "userGesture": True}, timeout=timeout)
        if "exceptionDetails" in result:
            d = result["exceptionDetails"]
            raise JSError(f"{(d.get('exception') or {}).get('description') or d.get('text')} "
                          f"(evaluating {js[:200]!r})")
        return result.get("result", {}).get("value")

    def wait_for(self, js, timeout=10.0, interval=0.05):
        """Polls the expression js until truthy and returns its value (a JS exception counts as not yet);
        CDPError naming js when still not true after timeout seconds."""
        deadline, last_error = time.monotonic() + timeout, None
        while True:
            try:
                value = self.evaluate(js, timeout=max(deadline - time.monotonic(), 1.0))
                if value:
                    return value
            except JSError as e:
                last_error = e
            except CDPError as e:   # the page did not answer in time, or chromium died
                raise CDPError(f"waiting for {js!r} to be true: {e}") from None
            if time.monotonic() >= deadline:
                why = f" (last error: {last_error})" if last_error else ""
                raise CDPError(f"timed out after {timeout:g} s waiting for {js!r} to be true{why}")
            time.sleep(interval)

    def click(self, x, y, button="left"):
        """A mouse click at (x, y) in CSS pixels of the viewport: move, press, release."""
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            params = {"type": kind, "x": x, "y": y}
            if kind != "mouseMoved":
                params.update(button=button, clickCount=1)
            self._call("Input.dispatchMouseEvent", params)

    def key(self, name):
        """Presses and releases one key: a single character or a name from SPECIAL_KEYS (Enter, Tab, ...)."""
        if name in SPECIAL_KEYS:
            (vk, text), key, code, shift = SPECIAL_KEYS[name], name, name, False
        elif len(name) == 1:
            key, text, shift = name, name, name.isupper() or name in '~!@#$%^&*()_+{}|:"<>?'
            if name.isascii() and name.isalpha():
                code, vk = "Key" + name.upper(), ord(name.upper())
            elif name.isdigit():
                code, vk = "Digit" + name, ord(name)
            else:
                code, vk = _PUNCT.get(name, ("", 0))
        else:
            raise CDPError(f"key({name!r}): not one character nor one of {', '.join(SPECIAL_KEYS)}")
        down = {"type": "keyDown" if text else "rawKeyDown", "key": key, "code": code,
                "windowsVirtualKeyCode": vk, "nativeVirtualKeyCode": vk, "modifiers": 8 if shift else 0}
        if text:
            down.update(text=text, unmodifiedText=text)
        self._call("Input.dispatchKeyEvent", down)
        self._call("Input.dispatchKeyEvent", {**down, "type": "keyUp", "text": "", "unmodifiedText": ""})

    def type(self, text):
        """Types text key by key; '\\n' presses Enter and '\\t' presses Tab."""
        for ch in text:
            self.key({"\n": "Enter", "\t": "Tab"}.get(ch, ch))

    def screenshot(self, path=None):
        """The viewport as PNG bytes, also written to path when given."""
        png = base64.b64decode(self._call("Page.captureScreenshot", {"format": "png"})["data"])
        if path:
            with open(path, "wb") as f:
                f.write(png)
        return png

    def drop_files(self, selector, files):
        """Drops files = [(name, bytes)] onto the element matching selector: dispatches dragenter,
        dragover and drop DragEvents carrying a DataTransfer of File objects at the element's centre.
        Returns True when the page accepted the drop (its handler called preventDefault)."""
        payload = json.dumps([[name, base64.b64encode(data).decode()] for name, data in files])
        return self.evaluate(f"""((sel, files) => {{
  const el = document.querySelector(sel), dt = new DataTransfer();
  if (!el) throw new Error('drop_files: no element matches ' + sel);
  for (const [name, b64] of files)
    dt.items.add(new File([Uint8Array.from(atob(b64), c => c.charCodeAt(0))], name));
  const r = el.getBoundingClientRect(), at = {{clientX: r.left + r.width / 2, clientY: r.top + r.height / 2}};
  return ['dragenter', 'dragover', 'drop'].map(type => el.dispatchEvent(
    new DragEvent(type, {{bubbles: true, cancelable: true, dataTransfer: dt, ...at}})))[2] === false;
}})({json.dumps(selector)}, {payload})""")

    def close(self):
        """Kills chromium's whole process group, reaps it, removes the temporary profile. Idempotent."""
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self.close)
        if self._proc is not None:
            if not self._dead:   # a polite Browser.close first lets chromium reap its own children
                with contextlib.suppress(CDPError):
                    self._send({"id": next(self._ids), "method": "Browser.close"})
                deadline = time.monotonic() + 5
                while time.monotonic() < deadline and not self._exited():
                    time.sleep(0.05)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._proc.pid, signal.SIGKILL)   # the leader is not reaped yet: its group is ours
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=10)
        for fd in self._fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds = []
        if self._reader is not None:
            self._reader.join(timeout=5)
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)
            if os.path.exists(self._tmp):   # a dying child may still have been writing
                time.sleep(0.2)
                shutil.rmtree(self._tmp, ignore_errors=True)

    def _exited(self):
        """Whether the leader exited, without reaping it (so its process group id stays ours to kill)."""
        try:
            return os.waitid(os.P_PID, self._proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:
            return True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".wasm": "application/wasm", ".js": "text/javascript", ".mjs": "text/javascript"}
    extra_headers = {}

    def end_headers(self):
        self.send_header("Cache-Control", "no-store")
        for name, value in self.extra_headers.items():
            self.send_header(name, value)
        super().end_headers()

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serve(folder, headers=None):
    """Serves folder on 127.0.0.1 at a free port from a thread, quietly (.wasm as application/wasm);
    yields the base URL ("http://127.0.0.1:PORT/"). headers: extra response headers, e.g.
    {"Cross-Origin-Opener-Policy": "same-origin", "Cross-Origin-Embedder-Policy": "require-corp"}."""
    if not os.path.isdir(folder):
        raise CDPError(f"serve: {folder} is not a folder")
    handler = type("Handler", (_QuietHandler,), {"extra_headers": dict(headers or {})})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=folder))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="cdp-serve", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
