#!/usr/bin/env python3
"""test_cdp_selftest.py: proves tests/web/cdp.py (the headless-Chromium driver) on a tiny page.

Usage: python3 tests/web/test_cdp_selftest.py [PATH/TO/chromium]   (exit 0: all passed, 1: a check failed;
no chromium found: prints "skipped: ..." and exits 0)

What it checks: a missing or broken chromium fails at once with a clear line; on a page served by
cdp.serve() (a WebGL2 canvas cleared to blue with a red triangle, a button, an input, a drop handler, a
console.log, a console.error, an uncaught exception): navigate, evaluate (values, promises, JS errors),
wait_for (true later; a false condition times out with a clear error), click, key/type (text, Enter, Tab
leaves the input), drop_files (names, sizes, bytes), the console and exception lists, WebGL2 present and
its pixels (gl.readPixels and the screenshot), screenshot size (viewport x dpr), serve's .wasm type and
quiet log, and that closing (also on an exception) leaves no live process and no temporary folder.
What it is not: a test of cplab-viz's web build (that test drives the real page with this same driver).
"""
import contextlib
import io
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdp  # noqa: E402
from pngread import decode_png  # noqa: E402

PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>cdp selftest</title></head>
<body style="margin:0;background:#fff">
<canvas id="gl" width="200" height="100" style="position:absolute;left:0;top:0"></canvas>
<button id="btn" style="position:absolute;left:10px;top:120px;width:100px;height:30px"
        onclick="this.textContent = 'clicked'">press me</button>
<input id="inp" style="position:absolute;left:10px;top:170px;width:150px">
<script>
const gl = document.getElementById('gl').getContext('webgl2', {preserveDrawingBuffer: true});
window.webgl2 = !!gl;
if (gl) {
  const sh = (type, src) => { const s = gl.createShader(type); gl.shaderSource(s, src); gl.compileShader(s); return s; };
  const prog = gl.createProgram();
  gl.attachShader(prog, sh(gl.VERTEX_SHADER, `#version 300 es
    in vec2 p; void main() { gl_Position = vec4(p, 0.0, 1.0); }`));
  gl.attachShader(prog, sh(gl.FRAGMENT_SHADER, `#version 300 es
    precision mediump float; out vec4 c; void main() { c = vec4(1.0, 0.0, 0.0, 1.0); }`));
  gl.linkProgram(prog);
  gl.bindBuffer(gl.ARRAY_BUFFER, gl.createBuffer());
  gl.bufferData(gl.ARRAY_BUFFER, new Float32Array([-0.5, -0.5, 0.5, -0.5, 0.0, 0.6]), gl.STATIC_DRAW);
  const loc = gl.getAttribLocation(prog, 'p');
  gl.enableVertexAttribArray(loc); gl.vertexAttribPointer(loc, 2, gl.FLOAT, false, 0, 0);
  gl.clearColor(0.2, 0.4, 0.8, 1.0); gl.clear(gl.COLOR_BUFFER_BIT);
  gl.useProgram(prog); gl.drawArrays(gl.TRIANGLES, 0, 3);
}
window.pixel = (x, y) => { const p = new Uint8Array(4); gl.readPixels(x, y, 1, 1, gl.RGBA, gl.UNSIGNED_BYTE, p); return Array.from(p); };
window.keys = [];
const inp = document.getElementById('inp');
inp.addEventListener('keydown', e => keys.push(e.key));
const canvas = document.getElementById('gl');
canvas.addEventListener('dragover', e => e.preventDefault());
canvas.addEventListener('drop', e => {
  e.preventDefault();
  Promise.all([...e.dataTransfer.files].map(async f =>
    [f.name, f.size, Array.from(new Uint8Array(await f.arrayBuffer())).reduce((a, b) => (a * 31 + b) % 1000003, 7)]))
    .then(r => { window.dropped = r; });
});
setTimeout(() => { window.later = 'yes'; }, 300);
console.log('selftest page loaded', 42);
console.error('deliberate console error');
setTimeout(() => { throw new Error('deliberate uncaught exception'); }, 0);
</script></body></html>
"""

BLUE, RED = (51, 102, 204), (255, 0, 0)
results = []


def check(name, ok, detail=""):
    results.append(ok)
    print(("ok:   " if ok else "FAIL: ") + name + ("" if ok else f" ({detail})"))


def expect_error(name, fn, *fragments, errtype=cdp.CDPError):
    start = time.monotonic()
    try:
        fn()
    except errtype as e:
        text = str(e)
        check(name, all(f in text for f in fragments), f"message {text[:300]!r} lacks {fragments}")
        return time.monotonic() - start
    except Exception as e:  # noqa: BLE001 - a wrong kind of error is a failure, reported
        check(name, False, f"raised {type(e).__name__}: {e}")
    else:
        check(name, False, "no error raised")
    return time.monotonic() - start


def live_in_group(pgid):
    """Processes of process group pgid that are not zombies (read from /proc)."""
    live = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                live.append(pid)
    return live


def checksum(data):
    value = 7
    for b in data:
        value = (value * 31 + b) % 1000003
    return value


def page_checks(b, base, folder):
    b.set_viewport(400, 300)
    b.navigate(base + "index.html")
    check("navigate: the page loaded", b.evaluate("document.title") == "cdp selftest")
    check("evaluate: values", b.evaluate("[1 + 1, 'a' + 'b', {x: 1.5}, null, true]") == [2, "ab", {"x": 1.5}, None, True])
    check("evaluate: undefined is None", b.evaluate("undefined") is None)
    check("evaluate: a promise is awaited", b.evaluate("new Promise(r => setTimeout(() => r(7), 50))") == 7)
    expect_error("evaluate: a JS exception raises JSError with its text",
                 lambda: b.evaluate("(() => { throw new Error('nope'); })()"), "Error: nope", errtype=cdp.JSError)
    check("wait_for: a condition that becomes true", b.wait_for("window.later", timeout=10) == "yes")
    took = expect_error("wait_for: a false condition times out naming it",
                        lambda: b.wait_for("window.never === 1", timeout=0.5), "timed out", "window.never === 1")
    check("wait_for: the timeout is kept (under 10 s for 0.5 s)", took < 10, f"{took:.1f} s")
    expect_error("wait_for: a condition that throws times out naming its last error",
                 lambda: b.wait_for("notDefinedYet.ready", timeout=0.3), "notDefinedYet.ready", "ReferenceError")
    check("evaluate: a 3 MB answer arrives whole (many pipe reads)",
          b.evaluate("'x'.repeat(3000000) + 'end'") == "x" * 3000000 + "end")
    check("webgl2: getContext('webgl2') is not null", b.evaluate("window.webgl2") is True)
    corner, middle = b.evaluate("pixel(2, 2)"), b.evaluate("pixel(100, 50)")
    check("webgl2: readPixels shows the clear colour and the triangle",
          corner[:3] == list(BLUE) and middle[:3] == list(RED), f"corner {corner}, middle {middle}")

    b.click(60, 135)
    check("click: the button's text changed", b.evaluate("document.getElementById('btn').textContent") == "clicked")
    b.click(80, 180)
    b.type("ab1.X")
    check("type: the input holds the text", b.evaluate("document.getElementById('inp').value") == "ab1.X",
          b.evaluate("document.getElementById('inp').value"))
    b.key("Enter")
    check("key: Enter reaches the input", b.evaluate("keys.includes('Enter')"), b.evaluate("keys"))
    b.key("Tab")
    check("key: Tab leaves the input", b.evaluate("document.activeElement.id") != "inp",
          b.evaluate("document.activeElement.id"))
    expect_error("key: an unknown key name is refused", lambda: b.key("NoSuchKey"), "NoSuchKey")

    files = [("q.npy", b"\x93NUMPY" + bytes(range(256)) * 3), ("empty.npy", b""), ("k v.npy", os.urandom(3 << 20))]
    accepted = b.drop_files("#gl", files)
    got = b.wait_for("window.dropped", timeout=10)
    want = [[n, len(d), checksum(d)] for n, d in files]
    check("drop_files: the page accepted the drop", accepted is True)
    check("drop_files: names, sizes and bytes arrive", got == want, f"got {got}, want {want}")
    expect_error("drop_files: a selector that matches nothing", lambda: b.drop_files("#nothing", files[:1]),
                 "no element matches #nothing", errtype=cdp.JSError)

    b.wait_for("true", timeout=1)   # a round trip: the console events of the load have arrived
    check("console: the console.log", ("log", "selftest page loaded 42") in b.console, b.console)
    check("console: the console.error", ("error", "deliberate console error") in b.console, b.console)
    check("exceptions: the uncaught exception",
          any("deliberate uncaught exception" in m.text for m in b.exceptions), b.exceptions)

    shot = os.path.join(folder, "shot.png")
    png = b.screenshot(shot)
    width, height, rows = decode_png(png)
    check("screenshot: written to the path", open(shot, "rb").read() == png)
    check("screenshot: the viewport's size", (width, height) == (400, 300), f"{width}x{height}")
    check("screenshot: not one flat colour", len({p for row in rows for p in row}) > 1)
    check("screenshot: shows the WebGL clear colour and the triangle",
          rows[3][3][:3] == BLUE and rows[50][100][:3] == RED, f"{rows[3][3]}, {rows[50][100]}")
    b.set_viewport(320, 200, dpr=2)
    width, height, _ = decode_png(b.screenshot())
    check("set_viewport: dpr 2 doubles the screenshot", (width, height) == (640, 400), f"{width}x{height}")

    errors = io.StringIO()
    with contextlib.redirect_stderr(errors):
        mime = b.evaluate(f"fetch('{base}m.wasm').then(r => r.headers.get('content-type'))")
        b.evaluate(f"fetch('{base}missing.txt').then(r => r.status)")
    check("serve: .wasm is application/wasm", mime == "application/wasm", mime)
    check("serve: no request log on stderr", errors.getvalue() == "", errors.getvalue()[:200])


def main():
    started = time.monotonic()
    chromium = sys.argv[1] if len(sys.argv) > 1 else cdp.find_chromium()
    if not chromium:
        print("skipped: no chromium found (/usr/bin/chromium, chromium or chromium-browser on PATH)")
        return 0
    took = expect_error("launch: a missing chromium is one clear error",
                        lambda: cdp.Browser("/nonexistent/chromium"), "/nonexistent/chromium", "not an executable")
    took += expect_error("launch: a program that exits at once is a clear error, not a hang",
                         lambda: cdp.Browser("/bin/false", timeout=20), "chromium closed its DevTools pipe",
                         "Target.createTarget")
    check("launch: both failures came quickly (under 15 s)", took < 15, f"{took:.1f} s")
    expect_error("serve: a missing folder is one clear error",
                 lambda: cdp.serve("/nonexistent/site").__enter__(), "/nonexistent/site is not a folder")

    with tempfile.TemporaryDirectory(prefix="cdp-selftest-") as folder:
        with open(os.path.join(folder, "index.html"), "w") as f:
            f.write(PAGE)
        with open(os.path.join(folder, "m.wasm"), "wb") as f:
            f.write(b"\0asm\1\0\0\0")
        with cdp.serve(folder) as base:
            b = cdp.Browser(chromium)
            with b:
                try:
                    page_checks(b, base, folder)
                except cdp.CDPError as e:   # a driver error ends the page checks as one failure, not a traceback
                    check("page checks ran to the end", False, e)
            check("close: no live chromium process left", not live_in_group(b._proc.pid),
                  live_in_group(b._proc.pid))
            check("close: the temporary profile is removed", not os.path.exists(b._tmp), b._tmp)
            try:
                with cdp.Browser(chromium) as b2:
                    raise KeyError("on purpose")
            except KeyError:
                pass
            check("close on an exception: no process, no temporary folder",
                  not live_in_group(b2._proc.pid) and not os.path.exists(b2._tmp))
            expect_error("a closed browser refuses calls", lambda: b2.evaluate("1"), "closed")
    print(f"{sum(results)}/{len(results)} checks passed in {time.monotonic() - started:.1f} s")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
