"""Independent checks shared by the pvpython tests: counts and metrics from first principles."""
import math

import numpy as np

SKIP = 77  # CTest's SKIP_RETURN_CODE for these tests


def level_for_samples(n):
    """Smallest c with 2**c + 1 >= n (the documented default cap of an axis of n samples)."""
    c = 0
    while (1 << c) + 1 < n:
        c += 1
    return c


def count_points(level, caps, boundary=True):
    """Grid points of a truncated sparse grid, from the definition in sparsegrid.h:
    level vectors l with l_t <= caps[t] (l_t >= 1 without boundary) and
    sum(max(l_t, 1)) <= level + D - 1; a block has 2 points along a level-0 axis and
    2**(l - 1) along a level-l axis."""
    D = len(caps)
    lo = 0 if boundary else 1
    total = 0

    def walk(t, budget, points):
        nonlocal total
        if t == D:
            total += points
            return
        for l in range(lo, caps[t] + 1):
            e = max(l, 1)
            if e > budget:
                break
            walk(t + 1, budget - e, points * (2 if l == 0 else 1 << (l - 1)))

    walk(0, level + D - 1, 1)
    return total


def metrics(reference, approx):
    """Max abs error, RMSE and PSNR (range of the reference) over all values and components."""
    ref = np.asarray(reference, dtype=np.float64).ravel()
    app = np.asarray(approx, dtype=np.float64).ravel()
    err = app - ref
    max_abs = float(np.max(np.abs(err)))
    rmse = float(np.sqrt(np.mean(err * err)))
    value_range = float(ref.max() - ref.min())
    psnr = math.inf if rmse == 0 else 20.0 * math.log10(value_range / rmse)
    return max_abs, rmse, psnr


def field(data, name, index=None):
    """A SparseGrid.* field value of a fetched vtkDataObject (all values when index is None)."""
    array = data.GetFieldData().GetAbstractArray(name)
    if array is None:
        raise AssertionError("missing field data array " + name)
    values = [array.GetVariantValue(i) for i in range(array.GetNumberOfValues())]
    values = [v.ToString() if v.IsString() else v.ToDouble() for v in values]
    return values if index is None else values[index]


def close(a, b, rel, abs_tol=0.0):
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= abs_tol + rel * max(abs(a), abs(b))


class Checker:
    """Collects failures so that one run reports all of them."""

    def __init__(self):
        self.failures = []

    def check(self, condition, message):
        if not condition:
            self.failures.append(message)
            print("FAILED:", message)

    def finish(self):
        if self.failures:
            print("%d check(s) failed" % len(self.failures))
            return 1
        print("all checks passed")
        return 0
