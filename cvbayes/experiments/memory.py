"""A run's peak resident memory on Linux: reset the process's high-water mark (``echo 5 >
/proc/self/clear_refs``) before the run, read VmHWM after it, so that the peak is the run's, not that of
numba's compilation or of an earlier run in the same process."""


def status_mib(field):
    """A memory field of /proc/self/status (VmRSS: now, VmHWM: peak) in MiB, or None off Linux."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def reset_peak():
    """Make the peak restart from the current resident size; False where that is impossible."""
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
    except OSError:
        return False
    return status_mib("VmHWM") is not None


def peak_mib():
    """The peak resident memory since the last `reset_peak`, in MiB (None off Linux)."""
    return status_mib("VmHWM")
