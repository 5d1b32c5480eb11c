"""Client-server run, as with the GUI: starts `mpiexec -np N pvserver`, connects pvpython to it,
loads the plugin on the server, and checks that the filters run distributed there:

    pvpython test_pvserver.py --plugin SparseGrid.so --mpiexec MPIEXEC [--mpi-flag F ...]
        --pvserver PVSERVER --ranks N

- the representation reaches the client once and only piece 0 holds its surpluses (with Output
  Grid Points, data information counts the grid once), while each server rank's Hierarchize
  input was its own piece;
- Reconstruct and Resample To Image deliver one piece per rank, with the values the client
  gets from a 1-process computation in its own builtin session (to float rounding, see
  mpi_checks.TOLERANCE).
"""
import argparse
import os
import socket
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mpi_checks import (TOLERANCE, Checker, array_of, extent_points, field_values, piece_extent,
                        surpluses_of)

import numpy as np
from paraview import servermanager
from paraview.simple import *  # noqa: F401,F403 (pvpython convention)

WHOLE = [-10, 10, -10, 10, -10, 10]
# Under CTest's TIMEOUT of 180 s; the variable lets a run check the watchdog itself.
WATCHDOG_SECONDS = float(os.environ.get("SPARSEGRID_PVSERVER_WATCHDOG", "140"))


def free_port():
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


# Where the client is, for the watchdog's report (CI saw this test hang once, with no
# output: it was buffered and lost when CTest killed the process at 180 s).
STAGE = ["reference (builtin session)"]


def stage(name):
    STAGE[0] = name
    print("[stage] " + name, flush=True)


class ServerOutput(threading.Thread):
    """Collects pvserver's output as it comes, so that the pipe never fills up."""

    def __init__(self, server):
        super().__init__(daemon=True)
        self.server = server
        self.lines = []

    def run(self):
        for line in self.server.stdout:
            self.lines.append(line)


def pipeline(checker, ranks):
    """Builds and checks the distributed pipeline; returns the images it fetched."""
    stage("%d-rank pipeline: Hierarchize" % ranks)
    w = Wavelet(WholeExtent=WHOLE)
    h = SparseGridHierarchize(ErrorBoundMode="Off", Input=w, Scalars=["RTData"])
    h.UpdatePipeline()
    grid = int(field_values(servermanager.Fetch(h, 0), "SparseGrid.NumberOfCoefficients")[0])
    fetched = surpluses_of(servermanager.Fetch(h), "RTData")
    checker.check(fetched is not None and fetched.shape[0] == grid,
                  "the client gets %s surpluses for a grid of %d"
                  % (None if fetched is None else fetched.shape[0], grid))
    hp = SparseGridHierarchize(ErrorBoundMode="Off", Input=w, Scalars=["RTData"],
                               OutputGridPoints=1)
    hp.UpdatePipeline()
    n = hp.GetDataInformation().GetNumberOfPoints()
    checker.check(n == grid, "with grid points, data information counts %d points for a grid "
                  "of %d" % (n, grid))
    Delete(hp)
    received = []
    stage("%d-rank pipeline: fetching the pieces" % ranks)
    for k in range(ranks):
        piece = servermanager.Fetch(h, k)
        held = surpluses_of(piece, "RTData")
        held = 0 if held is None else held.shape[0]
        checker.check(held == (grid if k == 0 else 0) and piece.GetNumberOfPoints() == 0,
                      "server rank %d holds %d surpluses and %d points"
                      % (k, held, piece.GetNumberOfPoints()))
        value = field_values(piece, "SparseGridLocal.InputPoints")
        received.append(int(value[0]) if value else -1)
    shares = [extent_points(piece_extent(WHOLE, k, ranks)) if ranks > 1 else extent_points(WHOLE)
              for k in range(ranks)]
    checker.check(received == shares, "Hierarchize inputs %s, pieces %s" % (received, shares))
    print("  %d server ranks: grid %d points, data information %d, Hierarchize inputs %s"
          % (ranks, grid, n, received))
    r = SparseGridReconstruct(Input=w, Source=h)
    s = SparseGridResampleToImage(Input=h, UseOriginalGeometry=1)
    images = {}
    for label, proxy in (("reconstruct", r), ("resample", s)):
        stage("%d-rank pipeline: %s" % (ranks, label))
        proxy.UpdatePipeline()
        total = proxy.GetDataInformation().GetNumberOfPoints()
        checker.check(total == sum(shares) if ranks > 1 else total == extent_points(WHOLE),
                      "%s delivers %d points over the ranks" % (label, total))
        images[label] = [servermanager.Fetch(proxy, k) for k in range(ranks)]
    return images


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--plugin", required=True)
    parser.add_argument("--mpiexec", required=True)
    parser.add_argument("--mpi-flag", action="append", default=[])
    parser.add_argument("--pvserver", required=True)
    parser.add_argument("--ranks", type=int, default=2)
    args = parser.parse_args()
    checker = Checker(collective=False)

    # The 1-process reference, in this client's own builtin session.
    LoadPlugin(args.plugin, remote=False, ns=globals())
    reference = pipeline(checker, 1)
    Disconnect()

    port = free_port()
    # pvpython initialised MPI as a singleton, which put its job's description in the
    # environment; an mpiexec started with it would take itself for part of that job.
    environment = {k: v for k, v in os.environ.items()
                   if not k.startswith(("OMPI_", "PMIX_", "ORTE_", "OPAL_")) or
                   k.startswith("OMPI_ALLOW_RUN_AS_ROOT")}
    server = subprocess.Popen([args.mpiexec] + args.mpi_flag +
                              ["-np", str(args.ranks), args.pvserver, "--server-port=%d" % port],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=environment)
    output = ServerOutput(server)
    output.start()

    fired = []

    def watchdog():
        # Fail with what is known instead of a bare CTest timeout: the stage, then the server's
        # output; stopping the server makes the client's blocked call return with an error.
        fired.append(STAGE[0])
        print("WATCHDOG: no result after %g s, stuck at: %s" % (WATCHDOG_SECONDS, STAGE[0]),
              flush=True)
        print("".join(output.lines), flush=True)
        server.terminate()  # mpiexec passes SIGTERM on to the ranks
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()

    timer = threading.Timer(WATCHDOG_SECONDS, watchdog)
    timer.daemon = True
    timer.start()
    try:
        stage("connecting to pvserver on port %d" % port)
        # Connect keeps trying for a minute while the server starts. (A probe connection of
        # our own would not do: pvserver would take it for its client and exit when it closed.)
        if Connect("localhost", port) is None:
            checker.check(False, "could not connect to pvserver on port %d" % port)
            return checker.finish()
        checker.check(servermanager.ActiveConnection.GetNumberOfDataPartitions() == args.ranks,
                      "the server has %d ranks"
                      % servermanager.ActiveConnection.GetNumberOfDataPartitions())
        stage("loading the plugin on the server")
        LoadPlugin(args.plugin, remote=True, ns=globals())
        images = pipeline(checker, args.ranks)
        stage("comparing with the 1-process images")
        for label, pieces in images.items():
            whole = reference[label][0]
            wext = whole.GetExtent()
            dims = [wext[2 * a + 1] - wext[2 * a] + 1 for a in range(3)]
            ref = array_of(whole, "RTData").reshape(dims[2], dims[1], dims[0])
            worst = 0.0
            for piece in pieces:
                e = piece.GetExtent()
                sub = ref[e[4] - wext[4]:e[5] - wext[4] + 1, e[2] - wext[2]:e[3] - wext[2] + 1,
                          e[0] - wext[0]:e[1] - wext[0] + 1]
                mine = array_of(piece, "RTData").reshape(sub.shape)
                worst = max(worst, float(np.max(np.abs(mine.astype(float) - sub))))
            bound = TOLERANCE * float(np.max(np.abs(ref)))
            print("  %s: max |server pieces - 1-process| = %g (tolerance %.3g)"
                  % (label, worst, bound))
            checker.check(worst <= bound, "%s differs from the 1-process image by %g"
                          % (label, worst))
        Disconnect()
    finally:
        timer.cancel()
        checker.check(not fired, "the watchdog stopped the server at: %s" % fired)
        stage("stopping pvserver")
        # pvserver exits once the client's connection closes, which with pvpython may be only
        # when this process ends: stop it here (mpiexec passes the signal on to the ranks).
        try:
            server.wait(timeout=5)
        except subprocess.TimeoutExpired:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        output.join(timeout=5)
        if checker.failures:
            print("".join(output.lines))
    return checker.finish()


if __name__ == "__main__":
    sys.exit(main())
