"""web_check.py: the browser build of cplab-viz, tested in headless Chromium against the native app.

Usage: web_check.py SITE CPLAB_VIZ CPLAB [--pictures DIR]
  SITE       the built site (scripts/web.sh: index.html, the WebAssembly inside)
  CPLAB_VIZ  the native cplab-viz (its --scene-json is the reference picture; needs a display: run this
             under xvfb-run, as scripts/test.sh does)
  CPLAB      the native cplab (inputs and outputs for the .npy check, and its verdicts)
  --pictures DIR  only write the three screenshots of docs/img/ (scripts/make-pictures.sh)

What it checks, over the DevTools protocol (cdp.py, no download beyond Debian's chromium):
  1. the page loads and draws (frames counted by the page), no console error, no exception
  2. for option sets covering every view, mode, layout, mask, an inference step and every lesson page,
     the scene JSON the page builds (window.cplab.sceneJson) equals `cplab-viz --headless --controls
     --scene-json` for the same options and size, byte for byte
  3. clicks where a user clicks them (the controls' drawn rectangles): Next / Previous walk the lesson's
     pages, a view button changes the view, and the address follows (a link copied reopens the picture)
  4. a deep link (?view=ring&cp=4&seq=32&step=1, ?lesson=4&page=2) opens its picture on load
  5. .npy inputs and outputs dropped on the canvas: the page's check gives cplab check's verdict, for a
     correct run and for one with dK and dV swapped; a bad .npy gets the command line's rule
  6. bad addresses give the command line's own one-line errors, shown in the page, which keeps drawing
Prints the page's frame-build time for the ring view at cp 64 x 1M tokens and the time to its first
frame (figures, not assertions). Exit 0 when every check passed, 1 otherwise.
What it is not: a test of the views' content (tests/test_viz_scene.cpp does that natively; this proves
the page shows the same).
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdp  # noqa: E402

W, H = 1280, 720
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)
    return ok


def native_scene(viz, args, tmp):
    """the scene JSON and stderr of `cplab-viz --headless --controls ARGS` at W x H"""
    png, js = os.path.join(tmp, "n.png"), os.path.join(tmp, "n.json")
    for f in (png, js):
        if os.path.exists(f):
            os.remove(f)
    r = subprocess.run([viz, "--headless", "--controls", "--size", f"{W}x{H}", "--out", png, "--scene-json", js] + args,
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        return None, r.stderr.strip()
    with open(js, encoding="utf-8") as f:
        return f.read(), ""


def native_error(viz, args):
    """the one line `cplab-viz ARGS` prints for a broken rule"""
    r = subprocess.run([viz] + args, capture_output=True, text=True, timeout=60)
    return r.returncode, r.stderr.strip()


def settle(b, frames=4):
    """wait until the page has drawn `frames` more frames"""
    n = b.wait_for("cplab.frames()", timeout=60)  # (throws, "not yet", until the module has started)
    b.wait_for(f"cplab.frames() >= {n + frames}", timeout=60)


def open_query(b, q):
    rc = b.evaluate(f"cplab.openQuery({json.dumps(q)})")
    settle(b)
    return rc


def words(q):
    """the command line of a query, as the page reads it (url_args.h): name=value -> --name value"""
    out = []
    for part in q.split("&"):
        if not part:
            continue
        k, _, v = part.partition("=")
        out.append("--" + k)
        if v:
            out.append(v)
    return out


def rect_center(b, name):
    r = b.evaluate(f"cplab.itemRect({json.dumps(name)})")
    if not r:
        raise RuntimeError(f"the page drew no control named {name!r} in its last frame")
    return (r[0] + r[2]) / 2, (r[1] + r[3]) / 2


def lesson_pages(viz):
    """(lesson, page) of every page: from the native app's own --lesson rule messages"""
    pages, lesson = [], 1
    while True:
        rc, err = native_error(viz, ["--lesson", str(lesson), "--page", "999", "--bench-frames", "1"])
        if "there are" in err and "lessons" in err:
            return pages
        # "--page 999: lesson 3 has 2 pages (1..2)"
        n = int(err.split("has ")[1].split(" page")[0])
        pages += [(lesson, k) for k in range(1, n + 1)]
        lesson += 1


def make_npy(cplab, d):
    """q, k, v, do (numpy, seeded) and cplab run's outputs for them: the correct outputs in d/good,
    the same with dK and dV swapped in d/bad; returns the run options"""
    import numpy as np
    opts = ["--mode", "p2p", "--cp", "4", "--layout", "zigzag", "--causal"]
    rng = np.random.default_rng(7)
    S, h, hk, dim = 64, 4, 2, 16
    for name, shape in (("q", (S, h, dim)), ("k", (S, hk, dim)), ("v", (S, hk, dim)), ("do", (S, h, dim))):
        np.save(os.path.join(d, name + ".npy"), rng.standard_normal(shape))
    good = os.path.join(d, "good")
    subprocess.run([cplab, "run", "--q", f"{d}/q.npy", "--k", f"{d}/k.npy", "--v", f"{d}/v.npy", "--do", f"{d}/do.npy",
                    "--backward", "--dtype", "double", "--out-dir", good] + opts, check=True, capture_output=True)
    bad = os.path.join(d, "bad")
    os.makedirs(bad)
    for n in ("o", "lse", "dq", "dk", "dv"):
        src = {"dk": "dv", "dv": "dk"}.get(n, n)
        with open(os.path.join(good, src + ".npy"), "rb") as f, open(os.path.join(bad, n + ".npy"), "wb") as g:
            g.write(f.read())
    return opts


def read(path):
    with open(path, "rb") as f:
        return f.read()


def pictures(site, out):
    with cdp.serve(site) as url, cdp.Browser() as b:
        b.set_viewport(W, H)
        for name, q in (("web_lesson.png", "lesson=4&page=2"), ("web_ring.png", "view=ring&cp=8&seq=64&step=1"),
                        ("web_timeline.png", "view=timeline&cp=8&seq=131072&heads=32&kv-heads=32&head-dim=128&link=eth100")):
            b.navigate(url + "index.html?" + q)
            b.wait_for("cplab.frames() >= 5", timeout=60)
            b.screenshot(os.path.join(out, name))
            print(f"wrote {out}/{name} ({q})")
    return 0


def main():
    args = sys.argv[1:]
    if "--pictures" in args:
        i = args.index("--pictures")
        return pictures(args[0], args[i + 1])
    if len(args) != 3:
        print(__doc__.split("\n\n")[0], file=sys.stderr)
        return 2
    site, viz, cplab = args
    for f in ("index.html",):
        if not os.path.exists(os.path.join(site, f)):
            print(f"web_check.py: error: {site}/{f} is missing (scripts/web.sh --no-serve builds it)", file=sys.stderr)
            return 1
    if cdp.find_chromium() is None:
        print("web_check.py: error: chromium is not installed (scripts/install-deps.sh --web installs it)", file=sys.stderr)
        return 1
    tmp = tempfile.mkdtemp(prefix="cplab-web-")
    with cdp.serve(site) as url, cdp.Browser() as b:
        b.set_viewport(W, H)
        # 1. load, first frame
        b.navigate(url + "index.html")
        b.wait_for("cplab.frames() >= 3", timeout=60)
        first = b.evaluate("cplab.firstFrameAt()")
        print(f"page: first frame {first:.0f} ms after navigation started (local server)")
        check(b.evaluate("cplab.error()") == "", "the page loads and draws the default picture without an error")
        check(b.evaluate("cplab.query()") == "view=ring", f"the default picture's address is view=ring ({b.evaluate('cplab.query()')})")

        # 2. the same scene as the native app, byte for byte
        sets = ["view=ownership&cp=4&seq=64", "view=ownership&cp=3&cu-seqlens=0,10,34,39&pad",
                "view=ring&cp=8&seq=64&step=1", "view=ring&cp=4&seq=32&layout=striped&no-causal&step=2",
                "view=ring&cp=4&seq=32&phase=bwd&step=1", "view=ring&mode=allgather&cp=4&seq=32&step=1",
                "view=ring&mode=a2a&cp=4&seq=32&kv-heads=4&step=1", "view=ring&mode=a2a%2Bp2p&cp=8&hcp=2,4&seq=64&step=2",
                "view=masks&cp=4&seq=32&layout=contiguous", "view=masks&cp=4&seq=64&window=5",
                "view=masks&cp=4&seq=64&chunk=16", "view=scheduler", "view=scheduler&cost=overhead&ranks=4&max-seqlen-per-rank=16384",
                "view=timeline&cp=8&seq=131072&heads=32&kv-heads=32&head-dim=128&link=eth100",
                "view=ring&kv-cache=448&seq=64&mode=pass-q&step=1",
                "view=timeline&kv-cache=448&seq=64&mode=pass-q"]
        same = 0
        for q in sets:
            if open_query(b, q) != 0:
                check(False, f"scene {q}: the page refused it: {b.evaluate('cplab.error()')}")
                continue
            page = b.evaluate("cplab.sceneJson()")
            nat, err = native_scene(viz, [w.replace("%2B", "+") for w in words(q)], tmp)
            same += check(nat is not None and page == nat, f"scene {q}: page == native ({len(page)} bytes)" +
                          ("" if nat is not None else f"; native failed: {err}"))
        pages = lesson_pages(viz)
        for lesson, k in pages:
            q = f"lesson={lesson}&page={k}"
            if open_query(b, q) != 0:
                check(False, f"scene {q}: the page refused it: {b.evaluate('cplab.error()')}")
                continue
            page = b.evaluate("cplab.sceneJson()")
            nat, err = native_scene(viz, ["--lesson", str(lesson), "--page", str(k)], tmp)
            same += check(nat is not None and page == nat, f"scene {q}: page == native ({len(page)} bytes)" +
                          ("" if nat is not None else f"; native failed: {err}"))
        print(f"scene JSON identical for {same} of {len(sets) + len(pages)} option sets ({len(pages)} lesson pages)")

        # 3. clicks where a user clicks, the address following
        b.navigate(url + "index.html?lesson=3&page=1")
        settle(b)
        check(b.evaluate("cplab.query()") == "lesson=3&page=1", "?lesson=3&page=1 opens lesson 3's first page")
        b.click(*rect_center(b, "Next >"))
        b.wait_for("cplab.query() === 'lesson=3&page=2'", timeout=30)
        check(True, "a click on Next > opens lesson 3 page 2 (the address says so)")
        b.click(*rect_center(b, "< Previous"))
        b.wait_for("cplab.query() === 'lesson=3&page=1'", timeout=30)
        check(True, "a click on < Previous goes back to page 1")
        b.click(*rect_center(b, "view:masks"))
        b.wait_for("cplab.query().startsWith('view=masks')", timeout=30)
        settle(b)
        q = b.evaluate("cplab.query()")
        scene = json.loads(b.evaluate("cplab.sceneJson()"))
        check(scene.get("view") == "masks", f"a click on the masks button shows the masks view; the address is {q}")
        check(b.evaluate("location.search") == "?" + q, "the address bar holds the picture's query")
        # a copied link reopens the same picture: without the lesson pane the canvas is taller, so its
        # size and panels' boxes differ; everything the picture says (title, notes, tiles with their
        # pairs, messages) is the same
        def meaning(text):
            return {k: v for k, v in json.loads(text).items() if k not in ("width", "height", "panels")}
        before = b.evaluate("cplab.sceneJson()")
        b.navigate(url + "index.html?" + q)
        settle(b)
        check(meaning(b.evaluate("cplab.sceneJson()")) == meaning(before) and b.evaluate("cplab.query()") == q,
              "reloading the copied address gives the same picture (title, notes, tiles, messages) and address")

        # the page opens from disk too (file://: the lessons' relative links from a local clone)
        b.navigate("file://" + os.path.abspath(os.path.join(site, "index.html")) + "?lesson=4&page=2")
        b.wait_for("cplab.frames() >= 4", timeout=60)
        check(b.evaluate("cplab.query()") == "lesson=4&page=2" and b.evaluate("cplab.error()") == "",
              "the page opens from disk (file://...index.html?lesson=4&page=2)")

        # 4. deep links on load
        for q in ("view=ring&cp=4&seq=32&step=1", "lesson=4&page=2"):
            b.navigate(url + "index.html?" + q)
            b.wait_for("cplab.frames() >= 4", timeout=60)
            page = b.evaluate("cplab.sceneJson()")
            nat, err = native_scene(viz, words(q) if not q.startswith("lesson") else ["--lesson", "4", "--page", "2"], tmp)
            check(page == nat and b.evaluate("cplab.error()") == "", f"the deep link ?{q} opens its picture on load")

        # 5. .npy files dropped on the canvas
        d = os.path.join(tmp, "npy")
        os.makedirs(d)
        opts = make_npy(cplab, d)
        for which in ("good", "bad"):
            r = subprocess.run([cplab, "check", "--inputs", d, "--outputs", os.path.join(d, which)] + opts,
                               capture_output=True, text=True, timeout=300)
            native_verdict = r.stdout.strip().splitlines()[0]
            open_query(b, "view=ring&mode=p2p&cp=4&layout=zigzag")  # the run the check assumes: the pane's
            b.evaluate("cplab.clearCheck()")
            files = [(n + ".npy", read(os.path.join(d, n + ".npy"))) for n in ("q", "k", "v", "do")]
            files += [(n + ".npy", read(os.path.join(d, which, n + ".npy"))) for n in ("o", "lse", "dq", "dk", "dv")]
            b.drop_files("#canvas", files)
            b.wait_for("cplab.checkText() !== '' || cplab.error() !== ''", timeout=120)
            settle(b)
            text, err = b.evaluate("cplab.checkText()"), b.evaluate("cplab.error()")
            page_verdict = text.strip().splitlines()[0] if text.strip() else err
            check(page_verdict == native_verdict and json.loads(b.evaluate("cplab.sceneJson()")).get("view") == "check",
                  f"dropped .npy ({which}): the page's check says {page_verdict!r}, cplab check {native_verdict!r}")
        # a trace, a check report and a schedule dropped: the picture `cplab-viz --trace / --check-report /
        # --schedule-json FILE` draws, byte for byte once the file's name in the page stands for its path
        trace, report, sched = (os.path.join(tmp, n) for n in ("trace.json", "report.json", "schedule.json"))
        subprocess.run([cplab, "run", "--cp", "4", "--seq", "256", "--causal", "--backward", "--trace", trace],
                       check=True, capture_output=True)
        with open(report, "w") as f:
            subprocess.run([cplab, "check", "--inputs", d, "--outputs", os.path.join(d, "bad"), "--json"] + opts,
                           stdout=f, timeout=300)
        with open(sched, "w") as f:
            subprocess.run([cplab, "schedule", "--ranks", "4", "--max-seqlen-per-rank", "8192",
                            "--lengths", "8192,4096,4096,2048,1024", "--json"], stdout=f, check=True)
        for path, native_args, view in ((trace, ["--view", "timeline", "--cp", "4", "--seq", "256", "--trace", trace], "timeline"),
                                        (report, ["--view", "check", "--check-report", report], "check"),
                                        (sched, ["--view", "scheduler", "--schedule-json", sched], "scheduler")):
            open_query(b, "view=ring&cp=4&seq=256")
            b.drop_files("#canvas", [(os.path.basename(path), read(path))])
            b.wait_for(f"JSON.parse(cplab.sceneJson()).view === '{view}' || cplab.error() !== ''", timeout=60)
            settle(b)
            page = b.evaluate("cplab.sceneJson()").replace("/.glfw_dropped_files/" + os.path.basename(path), path)
            nat, err = native_scene(viz, native_args, tmp)
            check(page == nat and b.evaluate("cplab.error()") == "",
                  f"a dropped {os.path.basename(path)} shows the {view} view, as cplab-viz {' '.join(native_args[:2])} "
                  f"draws it ({len(page)} bytes){'' if nat else '; native: ' + err}{b.evaluate('cplab.error()')}")
        # the same trace through the pane's "Open files..." button (the page's file chooser)
        open_query(b, "view=ring&cp=4&seq=256")
        b.choose_files(*rect_center(b, "Open files..."), [trace])
        b.wait_for("JSON.parse(cplab.sceneJson()).view === 'timeline' || cplab.error() !== ''", timeout=60)
        settle(b)
        page = b.evaluate("cplab.sceneJson()").replace("/opened/trace.json", trace)
        nat, err = native_scene(viz, ["--view", "timeline", "--cp", "4", "--seq", "256", "--trace", trace], tmp)
        check(page == nat, "Open files... (the file chooser) opens a trace as a drop does")
        # a bad .npy: the command line's rule
        bad = os.path.join(tmp, "badnpy")
        os.makedirs(bad)
        for n in ("k", "v"):
            with open(os.path.join(bad, n + ".npy"), "wb") as f:
                f.write(read(os.path.join(d, n + ".npy")))
        with open(os.path.join(bad, "q.npy"), "wb") as f:
            f.write(b"not a numpy file")
        with open(os.path.join(bad, "o.npy"), "wb") as f:
            f.write(read(os.path.join(d, "good", "o.npy")))
        r = subprocess.run([cplab, "check", "--inputs", bad, "--outputs", bad] + opts, capture_output=True, text=True)
        native_rule = r.stderr.strip().split(bad + "/q.npy", 1)[-1]
        b.evaluate("cplab.clearCheck()")
        b.drop_files("#canvas", [("q.npy", b"not a numpy file")] +
                     [(n + ".npy", read(os.path.join(d, n + ".npy"))) for n in ("k", "v")] +
                     [("o.npy", read(os.path.join(d, "good", "o.npy")))])
        b.wait_for("cplab.error() !== ''", timeout=60)
        err = b.evaluate("cplab.error()")
        check(r.returncode == 2 and err.endswith(native_rule) and "/q.npy" in err,
              f"a bad q.npy: the page says {err!r}; cplab check: {r.stderr.strip()!r}")
        check(b.evaluate("document.getElementById('cplab-error').textContent") == err, "the error is shown in the page")
        # a check larger than a browser tab should compute: refused before any data is read, the limit named
        import io
        import numpy as np
        def npy(shape):
            f = io.BytesIO()
            np.save(f, np.zeros(shape, dtype=np.float32))
            return f.getvalue()
        big = [("q.npy", npy((2048, 8, 64))), ("k.npy", npy((2048, 2, 64))), ("v.npy", npy((2048, 2, 64))),
               ("o.npy", npy((2048, 8, 64)))]
        b.evaluate("cplab.clearCheck()")
        b.drop_files("#canvas", big)
        b.wait_for("cplab.error().includes('GFLOP')", timeout=60)
        check("limit of cplab check in a browser page" in b.evaluate("cplab.error()"),
              f"a check too large for the page is refused with its limit: {b.evaluate('cplab.error()')!r}")
        b.drop_files("#canvas", [("notes.txt", b"hello")])
        b.wait_for("cplab.error().includes('notes.txt')", timeout=30)
        check(True, f"a file of another kind is refused by name: {b.evaluate('cplab.error()')!r}")

        # 6. bad addresses: the command line's errors, in the page, which keeps drawing
        for q, argv in (("cp=0", ["--cp", "0"]), ("cpp=4", ["--cpp", "4"]), ("view=rings", ["--view", "rings"]),
                        ("lesson=99", ["--lesson", "99"]), ("step=99", ["--step", "99"]),
                        ("cp=8&seq=30", ["--cp", "8", "--seq", "30"])):
            b.navigate(url + "index.html?" + q)
            b.wait_for("cplab.frames() >= 4", timeout=60)
            rc, native = native_error(viz, argv + ["--bench-frames", "1"])
            err = b.evaluate("cplab.error()")
            shown = b.evaluate("document.getElementById('cplab-error').textContent")
            check(rc == 2 and err == native and shown == err and b.evaluate("cplab.sceneJson()").startswith("{"),
                  f"?{q}: the page shows {err!r} (cplab-viz: {native!r}) and still draws")
        b.navigate(url + "index.html?out=x.png")
        b.wait_for("cplab.frames() >= 4", timeout=60)
        check("display option" in b.evaluate("cplab.error()"), f"?out=x.png: {b.evaluate('cplab.error()')!r}")

        # the frame-build time of the largest ring view (a figure, not an assertion)
        b.navigate(url + "index.html?view=ring&cp=64&seq=1048576")
        b.wait_for("cplab.frames() >= 130", timeout=120)
        print(f"page: ring view at cp 64 x 1M tokens: {b.evaluate('cplab.frameMs(120)'):.2f} ms mean frame build "
              f"(scene + ImGui draw lists) over 120 frames, {W}x{H}")

        errors = [m for m in b.console if m.level in ("error", "assert")]
        check(not errors, f"no console error ({[m.text for m in errors][:3]})")
        check(not b.exceptions, f"no uncaught exception ({[m.text for m in b.exceptions][:3]})")
    print(f"web_check.py: {'all passed' if not failures else str(len(failures)) + ' FAILED'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
