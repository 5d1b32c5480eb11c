"""The Compression Inspector test's checks.

Executed in ParaView's Python Shell (by InspectorPanel.xml, three times): each run records one
step in $SPARSEGRID_GUI_OUT/menu_summary.json: what the panel showed (the inspector.json it
writes when SPARSEGRID_INSPECTOR_SNAPSHOT is set), a copy of its picture
(inspector-<step>.png), and the SparseGrid.* field data of the active source read with
paraview.simple, independently of the panel. Imported by test_gui_menu.py, check_summary()
compares them.
"""
import json
import os
import shutil
import traceback

STEPS = ("table", "level", "bound", "open-reader", "reader", "reader-level")
FIELDS = ("ArrayNames", "CompressionRatio", "StoredBytes", "AbsoluteErrorBound", "MaxAbsError", "RMSE",
          "PSNR", "Backend", "TimeSeconds", "ErrorBound", "ErrorBoundMode", "LevelMaxAbsError")
RTOL = 2e-5  # the panel writes 6 significant digits


def _field(data, name):
    array = data.GetFieldData().GetAbstractArray(name)
    if array is None:
        return None
    values = []
    for i in range(array.GetNumberOfValues()):
        v = array.GetVariantValue(i)
        values.append(v.ToString() if v.IsString() else v.ToDouble())
    return values


def _step():
    import paraview
    from paraview import servermanager
    from paraview.simple import (Delete, GetActiveSource, OpenDataFile, Render, SaveData,
                                 SetActiveSource, Show)

    out = os.environ["SPARSEGRID_GUI_OUT"]
    path = os.path.join(out, "menu_summary.json")
    summary = {"ok": False, "steps": []}
    if os.path.exists(path):
        with open(path) as f:
            summary = json.load(f)
    name = STEPS[min(len(summary["steps"]), len(STEPS) - 1)]
    step = {"name": name}
    try:
        panel = os.environ["SPARSEGRID_INSPECTOR_SNAPSHOT"]
        with open(os.path.join(panel, "inspector.json")) as f:
            step["panel"] = json.load(f)
        shutil.copy(os.path.join(panel, "inspector.png"), os.path.join(out, "inspector-%s.png" % name))
        active = GetActiveSource()
        step["active"] = active.GetXMLName()
        file = os.path.join(out, "inspector.sgrid")
        if name == "open-reader":
            # The file saved at the level step, opened as a user opens it (its image shown).
            reader = OpenDataFile(file)
            Show(reader)
            Render()
            SetActiveSource(reader)
        elif name in ("reader", "reader-level"):
            step["reader_level_of_detail"] = active.SMProxy.GetProperty("LevelOfDetail").GetElement(0)
            probe = OpenDataFile(file)  # the file's representation, read here on its own
            probe.OutputReconstructedImage = 0
            step["field"] = {key: _field(servermanager.Fetch(probe), "SparseGrid." + key) for key in FIELDS}
            Delete(probe)
            SetActiveSource(active)
        else:
            step["property_bound"] = active.ErrorBound[0] if hasattr(active.ErrorBound, "__len__") else active.ErrorBound
            step["property_mode"] = active.SMProxy.GetProperty("ErrorBoundMode").GetElement(0)
            step["field"] = {key: _field(servermanager.Fetch(active), "SparseGrid." + key) for key in FIELDS}
        if name == "level":
            # The bound at that level as the .sgrid reader reports it (SparseGrid.LevelOfDetailBound).
            level = step["panel"]["level"]
            SaveData(file, proxy=active)
            reader = OpenDataFile(file)
            reader.OutputReconstructedImage = 0
            reader.LevelOfDetail = level
            step["reader_level_bound"] = _field(servermanager.Fetch(reader), "SparseGrid.LevelOfDetailBound")
            Delete(reader)
            SetActiveSource(active)
        step["messages"] = [m for m in getattr(paraview, "sparsegrid_gui_messages", []) if m[0] == "error"]
        step["ok"] = True
    except Exception:
        step["ok"] = False
        step["error"] = traceback.format_exc()
    summary["steps"].append(step)
    summary["ok"] = all(s.get("ok") for s in summary["steps"])
    summary["error"] = next((s.get("error") for s in summary["steps"] if not s.get("ok")), None)
    with open(path, "w") as f:
        json.dump(summary, f, indent=1, default=str)


def _close(text, value):
    try:
        shown = float(text)
    except (TypeError, ValueError):
        return False
    return abs(shown - value) <= RTOL * max(abs(value), 1e-300)


def format_bytes(n):
    """As the panel writes sizes."""
    if n < 1024:
        return "%d B" % n
    if n < 1024 * 1024:
        return "%.1f KiB" % (n / 1024.0)
    return "%.2f MiB" % (n / (1024.0 * 1024.0))


def check_summary(summary, log, check):
    steps = {s["name"]: s for s in summary.get("steps", [])}
    check(sorted(steps) == sorted(STEPS), "the three checks ran in the Python Shell: %s" % sorted(steps))
    if sorted(steps) != sorted(STEPS):
        return
    table, level, bound = steps["table"], steps["level"], steps["bound"]
    reader, reader_level = steps["reader"], steps["reader-level"]
    panel, field = table["panel"], table["field"]
    names = field["ArrayNames"] or []
    rows = panel.get("arrays", [])
    check(all(s["panel"].get("shown") for s in steps.values()),
          "the panel was shown at every step (%s)" % [s["panel"].get("shown") for s in steps.values()])
    check(len(rows) == len(names) + 1 and names, "the table has one row per compressed array %s and "
          "a total row (%d rows)" % (names, len(rows)))
    for i, array in enumerate(names[: len(rows) - 1]):
        row = rows[i]
        check(row["Array"] == array, "row %d is array %s (%s)" % (i, array, row["Array"]))
        for column, key in (("Bound", "AbsoluteErrorBound"), ("Max error", "MaxAbsError"),
                            ("RMSE", "RMSE"), ("PSNR (dB)", "PSNR")):
            value = field[key][i]
            check(_close(row[column], value), "%s of %s: the panel shows %s, the field data "
                  "SparseGrid.%s holds %r" % (column, array, row[column], key, value))
        check(float(row["Max error"]) <= float(row["Bound"]), "max error <= bound in the table")
    total = rows[-1]
    check(_close(total["Ratio"], field["CompressionRatio"][0]), "total ratio %s = "
          "SparseGrid.CompressionRatio %r" % (total["Ratio"], field["CompressionRatio"][0]))
    stored = format_bytes(int(field["StoredBytes"][0]))
    check(total["Stored"] == stored, "total stored %s = SparseGrid.StoredBytes %s"
          % (total["Stored"], stored))
    if len(names) == 1:
        check(rows[0]["Stored"] == stored, "the one array's streams are all the stored bytes (%s)"
              % rows[0]["Stored"])
    check(field["Backend"][0] in panel["provenance"] and "%g" % field["TimeSeconds"][0] in panel["provenance"],
          "backend and time as in the field data: %r" % panel["provenance"])
    check(panel["levels"] > 1 and panel["level"] == panel["levels"],
          "the slider starts at all %s levels (%s)" % (panel["levels"], panel["level"]))
    check(panel["level_bytes"] == panel["level_total_bytes"] > 0,
          "all levels read all the stream bytes (%s)" % panel["level_bytes"])
    rates = panel.get("rates", [])
    check(not panel["running"] and len(rates) >= 5,
          "the rate-distortion sweep finished in the background (%d points, %s)"
          % (len(rates), panel["rate_text"]))
    if len(rates) >= 2:
        ratios = [r[1] for r in rates]
        psnrs = [r[2] for r in rates]
        check(all(b <= a * 1.02 for a, b in zip(ratios, ratios[1:])),
              "the ratio falls as the bound tightens: %s" % ["%.3g" % r for r in ratios])
        check(all(b >= a - 0.5 for a, b in zip(psnrs, psnrs[1:])),
              "the PSNR rises as the bound tightens: %s" % ["%.3g" % p for p in psnrs])
        check(all(r[3] <= r[4] for r in rates), "the sample's max error keeps each bound")
    check(sum(panel.get("histogram", [])) > 0, "the error histogram holds the sample")

    lpanel = level["panel"]
    check(lpanel["level"] == 2, "the recorded slider event set level 2 (%s)" % lpanel["level"])
    check(0 < lpanel["level_bytes"] < lpanel["level_total_bytes"],
          "level 2 reads part of the streams: %s of %s bytes"
          % (lpanel["level_bytes"], lpanel["level_total_bytes"]))
    preview = lpanel.get("preview") or [None, 0, 0, 0, 0]
    check(preview[0] == 2 and preview[1] > 1 and preview[2] > 1 and preview[4] > preview[3],
          "the panel previews a slice decoded at level 2 (level, width, height, min, max: %s)"
          % preview)
    reader_bound = (level.get("reader_level_bound") or [None])[0]
    measured = level["field"].get("LevelMaxAbsError") or []
    shown = lpanel["level_text"].rsplit(" ", 1)[-1]
    if measured:
        # Array-major, one value per level: array 0, level 2.
        check("measured" in lpanel["level_text"] and _close(shown, measured[1]),
              "the error shown at level 2 (%s) is the one measured when compressing, "
              "SparseGrid.LevelMaxAbsError[1] = %r (the .sgrid reader's guarantee there: %r)"
              % (shown, measured[1], reader_bound))
    else:
        check(reader_bound is not None and _close(shown, reader_bound),
              "the bound shown at level 2 (%s) is the .sgrid reader's "
              "SparseGrid.LevelOfDetailBound at level 2 (%r)" % (shown, reader_bound))

    loosest = max(r[0] for r in rates) if rates else None
    bpanel, bfield = bound["panel"], bound["field"]
    check(loosest is not None and abs(bound["property_bound"] - loosest) <= 1e-12
          and bound["property_mode"] == 2,
          "the click on the chart set ErrorBound %s (mode %s, 2 = Relative) on the filter (wanted %s)"
          % (bound["property_bound"], bound["property_mode"], loosest))
    check(bfield["ErrorBound"] and abs(bfield["ErrorBound"][0] - bound["property_bound"]) <= 1e-12,
          "the filter re-ran: SparseGrid.ErrorBound is now %s" % bfield["ErrorBound"])
    check(bfield["CompressionRatio"][0] > field["CompressionRatio"][0],
          "the looser bound compresses more (%.4g > %.4g)"
          % (bfield["CompressionRatio"][0], field["CompressionRatio"][0]))
    check(bpanel.get("applied") == "0.1", "the panel applied 0.1 (%r)" % bpanel.get("applied"))
    brow = bpanel["arrays"][0] if bpanel.get("arrays") else {}
    check(_close(brow.get("Bound"), bfield["AbsoluteErrorBound"][0]),
          "the panel followed: bound %s = SparseGrid.AbsoluteErrorBound %r"
          % (brow.get("Bound"), bfield["AbsoluteErrorBound"][0]))
    check_reader(reader, reader_level, check)
    errors = reader_level.get("messages", [])
    check(not errors, "no error reached the Output Messages window: %s" % errors[:3])


def check_table(panel, field, what, check):
    """Each row of the panel's table against the field data."""
    names = field["ArrayNames"] or []
    rows = panel.get("arrays", [])
    check(len(rows) == len(names) + 1 and names, "%s: one row per array %s and a total row (%d rows)"
          % (what, names, len(rows)))
    for i, array in enumerate(names[: len(rows) - 1]):
        for column, key in (("Bound", "AbsoluteErrorBound"), ("Max error", "MaxAbsError"),
                            ("RMSE", "RMSE"), ("PSNR (dB)", "PSNR")):
            value = (field[key] or [None])[i]
            check(value is not None and _close(rows[i][column], value),
                  "%s: %s of %s shows %s, SparseGrid.%s holds %r"
                  % (what, column, array, rows[i][column], key, value))
    if rows:
        check(_close(rows[-1]["Ratio"], field["CompressionRatio"][0]), "%s: total ratio %s = "
              "SparseGrid.CompressionRatio %r" % (what, rows[-1]["Ratio"], field["CompressionRatio"][0]))


def check_reader(reader, reader_level, check):
    """The .sgrid file opened with the reader (its reconstructed image shown): the panel reads the
    file's representation itself, and its slider sets the reader's Level Of Detail."""
    panel = reader["panel"]
    check(reader["active"] == "SparseGridReader" and panel["source"].startswith("SparseGridReader"),
          "the panel follows the reader of the file (%s, %s)" % (reader["active"], panel["source"]))
    check_table(panel, reader["field"], "the file", check)
    check(panel["levels"] > 1 and panel["level"] == panel["levels"] and reader["reader_level_of_detail"] == 0,
          "the slider starts at all %s levels, the reader reads all (Level Of Detail %s)"
          % (panel["levels"], reader["reader_level_of_detail"]))
    lpanel = reader_level["panel"]
    check(lpanel["level"] == 3 and reader_level["reader_level_of_detail"] == 3,
          "the recorded slider event chose level 3 and set the reader's Level Of Detail to it (%s, %s)"
          % (lpanel["level"], reader_level["reader_level_of_detail"]))
    check(0 < lpanel["level_bytes"] < lpanel["level_total_bytes"],
          "level 3 of the file reads part of its streams: %s of %s bytes"
          % (lpanel["level_bytes"], lpanel["level_total_bytes"]))


if __name__ != "gui_inspector_check":
    _step()
