"""The real ParaView GUI under Xvfb with a window manager, driven as a user drives it.

Case reconstruct (default): Sparse Grid Reconstruct applied from the Filters menu.
Case resample-error: mistakes typed in Resample To Image's Properties panel and corrected; each
mistake must show one error in Output Messages, each correction none.
Case inspector: the Compression Inspector on a compressed volume (--data), played from
InspectorPanel.xml with gui_inspector_setup.py and checked by gui_inspector_check.py.

    pvpython test_gui_menu.py --paraview paraview --plugin SparseGrid.so --out DIR \
        [--window-manager auto|PROGRAM] --xvfb-run xvfb-run --interpreter pvpython

Starts its own X server (xvfb-run -a) and a window manager on it, waits until the manager
announces itself (EWMH), then runs `paraview --script=gui_menu_setup.py
--test-script=ReconstructFromMenu.xml --exit`: the recorded events create a Wavelet and Sparse
Grid Hierarchize from the menus, select the compressed output in the Pipeline Browser, open
Filters > Sparse Grid > Sparse Grid Reconstruct, pick the Wavelet as the probe in ParaView's
input dialog and press Apply; gui_menu_check.py then reports from the Python Shell.

Checks of the reconstruct case: the window manager managed ParaView's main window; every recorded event played (ParaView
exits 0); the new filter is Sparse Grid Reconstruct with the compressed output on its Source port
and the Wavelet on Input (the selection went to Source, the port the dialog fills first); the
reconstruction has the Wavelet's points, all valid, each within the default bound (1e-3 of the
original's range, computed here from the original values) of the original; no error reached
the Output Messages window or the terminal. Exits 77 (skipped) when no window manager is given.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WAVELET_POINTS = 21 ** 3  # ParaView's default Wavelet: extent -10..10 on each axis
RELATIVE_BOUND = 1e-3  # Sparse Grid Hierarchize's default: Relative, 1e-3
# Each case: the recorded events it plays, the start-up script, the Python Shell check.
CASES = {
    "reconstruct": ("ReconstructFromMenu.xml", "gui_menu_setup.py", "gui_menu_check.py"),
    "resample-error": ("ResampleErrorOnce.xml", "gui_menu_setup.py", "gui_menu_check.py"),
    "inspector": ("InspectorPanel.xml", "gui_inspector_setup.py", "gui_inspector_check.py"),
}
# Small EWMH window managers from Debian, tried in this order when none is named.
WINDOW_MANAGERS = ("openbox", "icewm", "fluxbox", "xfwm4", "metacity")


def inner(args):
    """Inside the X server: the window manager, then ParaView."""
    sys.path.insert(0, HERE)
    import x11_windows

    state = {"wm_ready": False}
    wm_log = open(os.path.join(args.out, "window-manager.log"), "w")
    wm = None
    try:
        # A window manager started while the new server is still settling can exit at once
        # (seen under load): a few tries.
        for attempt in range(3):
            wm = subprocess.Popen([args.window_manager], stdout=wm_log, stderr=subprocess.STDOUT)
            deadline = time.time() + 30
            while time.time() < deadline and wm.poll() is None:
                manager = x11_windows.window_manager()
                if manager:
                    state["wm_ready"] = True
                    state["wm_name"] = manager[0]
                    state["wm_attempts"] = attempt + 1
                    break
                time.sleep(0.2)
            if state["wm_ready"]:
                break
            state["wm_exit"] = wm.poll()
            time.sleep(1)
        if not state["wm_ready"]:
            return state
        _, setup, check = CASES[args.case]
        env = dict(os.environ,
                   SPARSEGRID_PLUGIN_FILE=args.plugin,
                   SPARSEGRID_GUI_OUT=args.out,
                   SPARSEGRID_GUI_DATA=args.data,
                   SPARSEGRID_INSPECTOR_SNAPSHOT=os.path.join(args.out, "panel"),
                   SPARSEGRID_GUI_CHECK=os.path.join(HERE, check))
        command = [args.paraview, "--dr",
                   "--script=" + os.path.join(HERE, setup),
                   "--test-script=" + args.events,
                   "--test-directory=" + args.out, "--exit"]
        state["command"] = " ".join(command)
        try:
            result = subprocess.run(command, env=env, timeout=300, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True)
            state["paraview_exit"] = result.returncode
            log = result.stdout
        except subprocess.TimeoutExpired as e:
            state["paraview_exit"] = "timeout"
            log = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        with open(os.path.join(args.out, "paraview.log"), "w") as f:
            f.write(log)
        return state
    finally:
        if wm is not None and wm.poll() is None:
            wm.terminate()
            try:
                wm.wait(10)
            except subprocess.TimeoutExpired:
                wm.kill()
        wm_log.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--paraview", required=True)
    parser.add_argument("--plugin", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--window-manager", default="auto",
                        help="program to run as the window manager; auto: the first found of "
                        + ", ".join(WINDOW_MANAGERS))
    parser.add_argument("--xvfb-run", default="xvfb-run")
    parser.add_argument("--interpreter", default=sys.executable)
    parser.add_argument("--case", default="reconstruct", choices=sorted(CASES),
                        help="which recorded session to play and check")
    parser.add_argument("--events", default="",
                        help="other recorded events to play (default: the case's own file)")
    parser.add_argument("--data", default="", help="the volume the inspector case opens")
    parser.add_argument("--inner", action="store_true")
    args = parser.parse_args()
    args.events = args.events or os.path.join(HERE, CASES[args.case][0])
    os.makedirs(args.out, exist_ok=True)
    if args.inner:
        with open(os.path.join(args.out, "inner.json"), "w") as f:
            json.dump(inner(args), f, indent=1)
        return 0

    if args.window_manager == "auto":
        found = [shutil.which(name) for name in WINDOW_MANAGERS]
        args.window_manager = next((path for path in found if path), "")
    if not args.window_manager or not os.access(args.window_manager, os.X_OK):
        print("SKIPPED: no window manager found (%s; e.g. apt-get install openbox, which run.sh "
              "does not install): the menu test runs ParaView as on a user's desktop"
              % ", ".join(WINDOW_MANAGERS))
        return 77
    if args.case == "inspector" and not os.path.exists(args.data):
        print("SKIPPED: the volume %s is absent (../shared/data or $SPARSEGRID_DATA_DIR)"
              % (args.data or "(none given)"))
        return 77
    for name in ("inner.json", "menu_summary.json", "paraview.log", "window-manager.log"):
        if os.path.exists(os.path.join(args.out, name)):
            os.remove(os.path.join(args.out, name))
    # Its own X server, never a shared one: a window manager changes how every client on the
    # display behaves.
    command = [args.xvfb_run, "-a", "-s", "-screen 0 1920x1080x24", args.interpreter,
               os.path.abspath(__file__), "--inner", "--paraview", args.paraview,
               "--plugin", args.plugin, "--out", args.out,
               "--window-manager", args.window_manager, "--case", args.case,
               "--events", os.path.abspath(args.events)]
    if args.data:  # pvpython aborts on an empty argument
        command += ["--data", args.data]
    print(" ".join(command))
    subprocess.run(command, timeout=420)

    failures = []

    def check(condition, message):
        print(("ok:     " if condition else "FAILED: ") + message)
        if not condition:
            failures.append(message)

    inner_path = os.path.join(args.out, "inner.json")
    check(os.path.exists(inner_path), "the run under Xvfb reported back")
    if not os.path.exists(inner_path):
        return 1
    with open(inner_path) as f:
        state = json.load(f)
    check(state.get("wm_ready"), "the window manager %s announced itself (EWMH) on the display"
          % state.get("wm_name", args.window_manager))
    if not state.get("wm_ready"):
        with open(os.path.join(args.out, "window-manager.log")) as f:
            print("window manager (exit %s): %s" % (state.get("wm_exit"), f.read()[-2000:]))
        return 1
    log = ""
    if os.path.exists(os.path.join(args.out, "paraview.log")):
        with open(os.path.join(args.out, "paraview.log")) as f:
            log = f.read()
    print("---- ParaView's output (last 3000 characters)\n" + log[-3000:] + "\n----")
    check(state.get("paraview_exit") == 0,
          "ParaView played every recorded event and exited 0 (got %s)" % state.get("paraview_exit"))
    summary_path = os.path.join(args.out, "menu_summary.json")
    check(os.path.exists(summary_path), "the check in the Python Shell ran")
    if not os.path.exists(summary_path):
        return 1
    with open(summary_path) as f:
        summary = json.load(f)
    print("summary:", json.dumps(summary, indent=1))
    check(summary.get("ok"), "the Python Shell check completed: %s" % summary.get("error"))
    if not summary.get("ok"):
        return 1
    if args.case == "resample-error":
        check_resample_error(summary, log, check)
    elif args.case == "inspector":
        import gui_inspector_check

        gui_inspector_check.check_summary(summary, log, check)
    else:
        check_reconstruct(summary, log, check)
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("all checks passed")
    return 0


def check_resample_error(summary, log, check):
    """Too large, corrected, 0, corrected: each mistake one error, each correction none."""
    messages = summary.get("messages", [])
    segments = [[]]
    for kind, text in messages:
        if kind == "marker":
            segments.append([])
        elif kind == "error":
            segments[-1].append(text.strip())
    check(len(segments) == 4, "the three Python Shell markers between the Applys were recorded "
          "(%d segments)" % len(segments))
    segments += [[]] * (4 - len(segments))
    expected = [
        ("Sampling Dimensions 100000^3", "The output is too large for this process: an image of "
         "100000 x 100000 x 100000 points needs"),
        ("the correction to 10 x 100 x 100", None),
        ("Sampling Dimensions x = 0", "Sampling Dimensions must be at least 1 along every axis "
         "(got 0 100 100)"),
        ("the correction to 10 again", None),
    ]
    for (step, wanted), errors in zip(expected, segments[:4]):
        shown = [e[-150:] for e in errors]
        if wanted is None:
            check(not errors, "Apply after %s: no error (%d: %s)" % (step, len(errors), shown))
        else:
            check(len(errors) == 1 and wanted in errors[0],
                  "Apply with %s: one error in Output Messages, the refusal (%d: %s)"
                  % (step, len(errors), shown))
    check(summary.get("active") == "SparseGridResampleToImage",
          "the active source is Sparse Grid Resample To Image (%s)" % summary.get("active"))
    check(summary.get("dimensions") == [10, 100, 100],
          "the corrected output has 10 x 100 x 100 points (%s)" % summary.get("dimensions"))


def check_reconstruct(summary, log, check):
    """Reconstruct applied from the menu to the selected compressed output."""
    check(any("ParaView" in title for title in summary.get("managed_windows", [])),
          "the window manager manages ParaView's main window: %s" % summary.get("managed_windows"))
    check(summary.get("active") == "SparseGridReconstruct",
          "the filter the menu created is Sparse Grid Reconstruct (%s)" % summary.get("active"))
    check([p[0] for p in summary.get("source_port", [])] == ["SparseGridHierarchize"],
          "Source holds the compressed output that was selected: %s" % summary.get("source_port"))
    check([p[0] for p in summary.get("input_port", [])] == ["RTAnalyticSource"],
          "Input holds the Wavelet picked in the dialog: %s" % summary.get("input_port"))
    check(summary.get("points") == WAVELET_POINTS and summary.get("probe_points") == WAVELET_POINTS,
          "the reconstruction has the probe's %d points (%s)" % (WAVELET_POINTS, summary.get("points")))
    check(summary.get("mask_all_valid") is True, "every probe point is valid (vtkValidPointMask 1)")
    low, high = summary.get("original_range", [0.0, 0.0])
    bound = RELATIVE_BOUND * (high - low)
    difference = summary.get("max_abs_difference")
    check(high - low > 100, "the original Wavelet spans its usual range (%s)" % [low, high])
    check(difference is not None and difference <= bound * (1 + 1e-6),
          "every reconstructed value is within the default bound %.4g of the original (max %s)"
          % (bound, difference))
    errors = [text for kind, text in summary.get("messages", []) if kind == "error"]
    check(not errors, "no error reached the Output Messages window: %s" % errors[:3])
    terminal = [line for line in log.splitlines() if re.search(r"\bERR\||^ERROR:", line)]
    check(not terminal, "no error on ParaView's terminal: %s" % terminal[:3])


if __name__ == "__main__":
    sys.exit(main())
