# script-version: 2
r"""
Catalyst script (version 2): compress the simulation's image in situ with the SparseGrid plugin.

Each time step Catalyst hands over (every k-th with SPARSEGRID_CATALYST_EVERY=k), Sparse Grid
Hierarchize compresses the image's point arrays into sparse-grid coefficients, and the rank that
holds the result writes them to one .sgrid file per step. One line per step reports what it
cost and what it gained:

    [SparseGrid] step=3 time=0.0039 ratio=19.4 coefficients=27905 hierarchize_s=0.012 ...

The same script runs from a C++ adaptor (Examples/Catalyst/SparseGridHeatExample, channel
"grid", array "temperature") and from ParaView's Python mini-app (channel "input", array
"RTData"):

    PV_PLUGIN_PATH=<folder of SparseGrid.so> \
      pvbatch --sym -m paraview.demos.wavelet_miniapp -t 10 --size 33 -s sparsegrid_catalyst.py

Settings come from environment variables, since a legacy Catalyst adaptor cannot pass arguments
to a script (the example's command line sets them for you):

    SPARSEGRID_CATALYST_OUTPUT     folder of the .sgrid files (default: sgrid)
    SPARSEGRID_CATALYST_PATTERN    file name pattern, % step (default: field_%06d.sgrid)
    SPARSEGRID_CATALYST_EVERY      compress every k-th step (default: 1)
    SPARSEGRID_CATALYST_CHANNEL    channel to compress (default: grid, else input, else the first)
    SPARSEGRID_CATALYST_ARRAYS     comma-separated point arrays (default: all of them)
    SPARSEGRID_CATALYST_ERROR_BOUND_MODE  Relative, Absolute or Off (default: Relative)
    SPARSEGRID_CATALYST_ERROR_BOUND       the bound: every value within it (default: 1e-3)
    SPARSEGRID_CATALYST_LEVEL      Off only: sparse-grid level, 0 = automatic (default: 0)
    SPARSEGRID_CATALYST_PRECISION  Float or Double (default: Float)
    SPARSEGRID_CATALYST_BOUNDARY   1 with boundary points, 0 without (default: 1)
    SPARSEGRID_CATALYST_BACKEND    Auto, CPU or CUDA (default: Auto)
    SPARSEGRID_CATALYST_ERROR      1: also compute the error on the input (costs one reconstruction)
    SPARSEGRID_PLUGIN              SparseGrid.so to load; unset: found by name on PV_PLUGIN_PATH
"""
import os
import sys
import time

from paraview import catalyst
from paraview import servermanager
from paraview.simple import *  # noqa: F401,F403 (the ParaView scripting API)


def _fail(message):
    """A wrong setting, channel or array: one clear line, then the whole run stops with a
    non-zero exit status. Catalyst would otherwise report the script's exception and carry on
    without it (exit status 0, no files), or raise it again at every step. Every rank finds
    the same mistake, so every rank stops here."""
    if _rank() == 0:
        print("[SparseGrid] error: " + message, file=sys.__stderr__, flush=True)
    sys.__stdout__.flush()
    os._exit(2)


def _rank():
    return servermanager.vtkProcessModule.GetProcessModule().GetPartitionId()


def _setting(name, default, convert=str, allowed=None):
    key = "SPARSEGRID_CATALYST_" + name
    text = os.environ.get(key, default)
    try:
        value = convert(text)
    except ValueError:
        _fail("%s=%r is not a valid %s." % (key, text, "number" if convert is not str else "value"))
    if allowed is not None and value not in allowed:
        _fail("%s=%r: expected one of %s." % (key, text, ", ".join(str(a) for a in allowed)))
    return value


OUTPUT = _setting("OUTPUT", "sgrid")
PATTERN = _setting("PATTERN", "field_%06d.sgrid")
EVERY = max(1, _setting("EVERY", "1", int))
CHANNEL = _setting("CHANNEL", "")
ARRAYS = [a for a in _setting("ARRAYS", "").split(",") if a]
ERROR_BOUND_MODE = _setting("ERROR_BOUND_MODE", "Relative", str, ("Relative", "Absolute", "Off"))
ERROR_BOUND = _setting("ERROR_BOUND", "1e-3", float)
if not (0 < ERROR_BOUND < float("inf")):
    _fail("SPARSEGRID_CATALYST_ERROR_BOUND=%r: the bound must be a positive, finite number."
          % os.environ.get("SPARSEGRID_CATALYST_ERROR_BOUND"))
LEVEL = _setting("LEVEL", "0", int)
PRECISION = _setting("PRECISION", "Float", str, ("Float", "Double"))
BOUNDARY = _setting("BOUNDARY", "1", int, (0, 1))
BACKEND = _setting("BACKEND", "Auto", str, ("Auto", "CPU", "CUDA"))
COMPUTE_ERROR = _setting("ERROR", "0", int, (0, 1))
try:
    PATTERN % 0
except (TypeError, ValueError):
    _fail("SPARSEGRID_CATALYST_PATTERN=%r must hold one %%d (the step)." % PATTERN)

# Every rank runs this script (Catalyst is symmetric), so every rank loads the plugin.
try:
    if os.environ.get("SPARSEGRID_PLUGIN"):
        LoadPlugin(os.environ["SPARSEGRID_PLUGIN"], remote=False, ns=globals())
    else:
        LoadDistributedPlugin("SparseGrid", remote=False, ns=globals())
except RuntimeError as error:
    # Catalyst reports a failing script and carries on without it: say how to fix it.
    raise RuntimeError("%s. Put the folder of SparseGrid.so on PV_PLUGIN_PATH (ParaView reads it "
                       "when it starts) or the file in SPARSEGRID_PLUGIN." % error) from None

# Catalyst runs catalyst_execute only on the steps the global trigger lets through; on the
# others the adaptor is told that nothing is needed and builds nothing.
options = catalyst.Options()
options.GlobalTrigger = "TimeStep"
options.GlobalTrigger.Frequency = EVERY

RANK = servermanager.vtkProcessModule.GetProcessModule().GetPartitionId()
RANKS = servermanager.vtkProcessModule.GetProcessModule().GetNumberOfLocalPartitions()


def _log(message):
    # Catalyst may capture sys.stdout; the original stream always reaches the terminal.
    print(message, file=sys.__stdout__, flush=True)


def _channel_names():
    """The channels the adaptor offers (Catalyst imports this script while it asks the
    pipeline for its first data description, so the description is already there)."""
    try:
        from paraview.modules.vtkPVPythonCatalyst import vtkCPPythonScriptV2Helper

        helper = vtkCPPythonScriptV2Helper.GetActiveInstance()
        description = helper.GetDataDescription() if helper else None
    except ImportError:
        description = None
    if description is None:
        return []
    return [description.GetInputDescriptionName(i)
            for i in range(description.GetNumberOfInputDescriptions())]


def _pick_channel():
    names = _channel_names()
    if CHANNEL:
        if names and CHANNEL not in names:
            _fail("SPARSEGRID_CATALYST_CHANNEL=%r names no channel of this simulation; it offers "
                  "%s." % (CHANNEL, ", ".join(repr(n) for n in names)))
        return CHANNEL
    # The C++ example's name first, then the mini-app's, then whatever the adaptor offers.
    for name in ("grid", "input"):
        if name in names:
            return name
    return names[0] if names else "grid"


# registrationName = the channel name: this is what makes Catalyst feed the simulation's data
# into this producer.
CHANNEL_NAME = _pick_channel()
producer = TrivialProducer(registrationName=CHANNEL_NAME)

# Built at the first step, once the producer has data: the array selection needs the arrays,
# and a filter created on an empty producer only produces pipeline errors.
compressed = None
snapshot = None
writer = None
history = []

if RANK == 0:
    os.makedirs(OUTPUT, exist_ok=True)


def _build():
    global compressed, snapshot, writer
    data = producer.GetClientSideObject().GetOutputDataObject(0)
    if data is None or not data.IsA("vtkImageData"):
        _fail("channel %r delivers %s, not an image: set SPARSEGRID_CATALYST_CHANNEL to the "
              "channel of the simulation's image." % (
                  CHANNEL_NAME,
                  "no data" if data is None else data.GetClassName()))
    pd = data.GetPointData()
    skip = ("vtkGhostType", "vtkValidPointMask")
    present = [pd.GetArrayName(i) for i in range(pd.GetNumberOfArrays())
               if pd.GetArrayName(i) not in skip]
    names = ARRAYS or present
    # A rank with an empty piece may lack the arrays; the filter takes them from another.
    missing = [n for n in names if n not in present] if data.GetNumberOfPoints() > 0 else []
    if missing:
        _fail("SPARSEGRID_CATALYST_ARRAYS names %s, which the point data of channel %r lack; "
              "they hold %s." % (", ".join(repr(n) for n in missing), CHANNEL_NAME,
                                 ", ".join(repr(n) for n in present) or "no array"))
    if not names and data.GetNumberOfPoints() > 0:
        _fail("the point data of channel %r hold no array to compress." % CHANNEL_NAME)
    compressed = SparseGridHierarchize(registrationName="SparseGridHierarchize", Input=producer)
    compressed.Scalars = names
    compressed.ErrorBoundMode = ERROR_BOUND_MODE
    compressed.ErrorBound = ERROR_BOUND
    compressed.Level = LEVEL
    compressed.Precision = PRECISION
    compressed.Boundary = BOUNDARY
    compressed.Backend = BACKEND
    compressed.ComputeError = COMPUTE_ERROR
    # The writer reads a copy of the result through a producer of its own. Connected to the
    # filter directly, it asks for the whole data set as one piece when it writes: the filter
    # then runs a second time, as a serial filter on the writing rank's own piece only (on 2
    # ranks: a file of half the image).
    snapshot = PVTrivialProducer(registrationName="SparseGridSnapshot")
    writer = servermanager.writers.SparseGridWriter(Input=snapshot)


def _field(data, name, index=0):
    array = data.GetFieldData().GetAbstractArray("SparseGrid." + name)
    if array is None or array.GetNumberOfValues() <= index:
        return None
    return array.GetVariantValue(index).ToString() if array.IsA("vtkStringArray") \
        else array.GetTuple1(index)


def catalyst_execute(info):
    if compressed is None:
        producer.UpdatePipeline(info.time)
        _build()

    # Collective: every rank takes part, with its own piece. The VTK algorithm is updated
    # directly rather than through the proxy (compressed.UpdatePipeline): the proxy's update
    # also refreshes the domains of the filter's properties, for which ParaView gathers the
    # input's data information, a full pass over the field (array ranges) that cost 10 times
    # the compression itself (193^3 points: 0.37 s against 0.03 s per step).
    start = time.perf_counter()
    compressed.GetClientSideObject().UpdateTimeStep(info.time, RANK, RANKS, 0)
    update_s = time.perf_counter() - start

    output = compressed.GetClientSideObject().GetOutputDataObject(0)
    # Every rank's output carries the representation's field data when the step succeeded (the
    # ranks agree on failures). The payload is the fixed level's surpluses, whole on rank 0, or
    # the error-bounded bricks, each rank holding its own: every rank takes part in writing
    # (error-bounded: every rank writes its own bricks into the one file).
    fd = output.GetFieldData() if output is not None else None
    if fd is None or fd.GetAbstractArray("SparseGrid.FormatVersion") is None:
        if RANK == 0:
            _log("[SparseGrid] step=%d: no compressed data; nothing written" % info.timestep)
        return

    path = os.path.join(OUTPUT, PATTERN % info.timestep)
    start = time.perf_counter()
    copy = output.NewInstance()
    copy.ShallowCopy(output)
    snapshot.GetClientSideObject().SetOutput(copy, info.time)
    snapshot.MarkModified(snapshot)
    writer.FileName = path
    writer.UpdatePipeline(info.time)
    write_s = time.perf_counter() - start
    if RANK != 0:
        return
    # The plugin's classes have no Python wrapping: vtkWriter's error code is what is visible.
    error = writer.GetClientSideObject().GetErrorCode()
    if error or not os.path.exists(path):
        _log("[SparseGrid] step=%d: writing %s failed (VTK error code %d; see the error "
             "above)" % (info.timestep, path, error))
        return

    record = {
        "step": info.timestep,
        "time": info.time,
        "ratio": _field(output, "CompressionRatio"),
        "coefficients": int(_field(output, "NumberOfCoefficients") or 0),
        "level": int(_field(output, "Level") or 0),
        "hierarchize_s": _field(output, "TimeSeconds"),
        "update_s": update_s,
        "write_s": write_s,
        "bytes": os.path.getsize(path),
    }
    history.append(record)
    line = ("[SparseGrid] step={step} time={time:.6g} ratio={ratio:.4g} "
            "coefficients={coefficients} level={level} hierarchize_s={hierarchize_s:.6f} "
            "update_s={update_s:.6f} write_s={write_s:.6f} bytes={bytes}").format(**record)
    if ERROR_BOUND_MODE != "Off":
        line += " bound=%.6g max_abs_error=%.6g" % (_field(output, "AbsoluteErrorBound"),
                                                    _field(output, "MaxAbsError"))
    elif COMPUTE_ERROR:
        line += " max_abs_error=%.6g psnr_db=%.4g" % (_field(output, "MaxAbsError"),
                                                       _field(output, "PSNR"))
    _log(line + " file=" + path)


def catalyst_finalize():
    if RANK != 0 or not history:
        return

    def median(key):
        values = sorted(r[key] for r in history)
        n = len(values)
        return values[n // 2] if n % 2 else 0.5 * (values[n // 2 - 1] + values[n // 2])

    _log("[SparseGrid] summary: steps=%d ranks=%d median ratio=%.4g hierarchize_s=%.6f "
         "update_s=%.6f write_s=%.6f bytes=%d total_bytes=%d"
         % (len(history), RANKS, median("ratio"), median("hierarchize_s"), median("update_s"),
            median("write_s"), median("bytes"), sum(r["bytes"] for r in history)))
