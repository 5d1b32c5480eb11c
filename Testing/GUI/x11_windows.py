"""What the X server says about window management, read with libX11 through ctypes (no
x11-utils needed): whether a window manager runs (EWMH's _NET_SUPPORTING_WM_CHECK on the root
window), its name, and the top-level windows it manages (_NET_CLIENT_LIST) with their titles.
"""
import ctypes
import ctypes.util

_x11 = None


def _lib():
    global _x11
    if _x11 is None:
        name = ctypes.util.find_library("X11")
        if not name:
            raise OSError("libX11 not found")
        x = ctypes.CDLL(name)
        x.XOpenDisplay.restype = ctypes.c_void_p
        x.XOpenDisplay.argtypes = [ctypes.c_char_p]
        x.XCloseDisplay.argtypes = [ctypes.c_void_p]
        x.XDefaultRootWindow.restype = ctypes.c_ulong
        x.XDefaultRootWindow.argtypes = [ctypes.c_void_p]
        x.XInternAtom.restype = ctypes.c_ulong
        x.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
        x.XGetWindowProperty.restype = ctypes.c_int
        x.XGetWindowProperty.argtypes = [
            ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_long, ctypes.c_long,
            ctypes.c_int, ctypes.c_ulong, ctypes.POINTER(ctypes.c_ulong),
            ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_ulong),
            ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.c_void_p)]
        x.XFree.argtypes = [ctypes.c_void_p]
        _x11 = x
    return _x11


def _property(x, display, window, name, max_items=4096):
    """The items of a window property: ints for format 32 (C longs), bytes for format 8."""
    atom = x.XInternAtom(display, name.encode(), 0)
    actual_type = ctypes.c_ulong()
    actual_format = ctypes.c_int()
    items = ctypes.c_ulong()
    after = ctypes.c_ulong()
    data = ctypes.c_void_p()
    status = x.XGetWindowProperty(display, window, atom, 0, max_items, 0, 0,
                                  ctypes.byref(actual_type), ctypes.byref(actual_format),
                                  ctypes.byref(items), ctypes.byref(after), ctypes.byref(data))
    if status != 0 or not data.value:
        return None
    try:
        if actual_format.value == 32:
            return list(ctypes.cast(data, ctypes.POINTER(ctypes.c_ulong))[:items.value])
        if actual_format.value == 8:
            return ctypes.string_at(data, items.value)
        return None
    finally:
        x.XFree(data)


def window_manager():
    """(name, [(window id, title), ...]) of the running window manager and the windows it
    manages, or None when the display has no EWMH window manager (or cannot be opened)."""
    x = _lib()
    display = x.XOpenDisplay(None)
    if not display:
        return None
    try:
        root = x.XDefaultRootWindow(display)
        check = _property(x, display, root, "_NET_SUPPORTING_WM_CHECK")
        if not check:
            return None
        name = _property(x, display, check[0], "_NET_WM_NAME") or b"?"
        clients = []
        for window in _property(x, display, root, "_NET_CLIENT_LIST") or []:
            title = (_property(x, display, window, "_NET_WM_NAME")
                     or _property(x, display, window, "WM_NAME") or b"")
            clients.append((int(window), title.decode("utf-8", "replace")))
        return name.decode("utf-8", "replace"), clients
    finally:
        x.XCloseDisplay(display)
