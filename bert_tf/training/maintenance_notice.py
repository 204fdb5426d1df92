"""Google Compute Engine's notice of host maintenance, which GPU VMs get instead of a live migration.

Before maintenance the metadata server's `instance/maintenance-event` turns from `NONE` to
`TERMINATE_ON_HOST_MAINTENANCE` (up to an hour ahead on GPU VMs); at the maintenance the VM is shut down, and the
run gets SIGTERM (see `preemption`). `MaintenanceWatcher` polls that value from a thread so that the run saves a
checkpoint as soon as the notice comes, then trains on until the SIGTERM: a shutdown too short for a save then
costs nothing, and a run restarted on the same VM before the maintenance does not stop again at once.
TensorFlow's `PreemptionCheckpointHandler` reads the same value (see docs/accelerators.md, "Preemption").

Off Google Cloud there is no metadata server: the first request fails and the thread ends.
"""

import os
import threading
import urllib.request

from absl import logging

# The variable Google's client libraries read for the metadata server's address (tests point it at a local one).
METADATA_HOST_VARIABLE = "GCE_METADATA_HOST"
DEFAULT_METADATA_HOST = "metadata.google.internal"
TERMINATE = "TERMINATE_ON_HOST_MAINTENANCE"


def maintenance_event(host=None, timeout=2.0):
    """The metadata server's `instance/maintenance-event` (`NONE`, `TERMINATE_ON_HOST_MAINTENANCE`,
    `MIGRATE_ON_HOST_MAINTENANCE`), or None when no metadata server answers at `host` (by default
    `$GCE_METADATA_HOST`, else metadata.google.internal).

    >>> maintenance_event("127.0.0.1:9", timeout=0.5) is None
    True
    """
    host = host or os.environ.get(METADATA_HOST_VARIABLE) or DEFAULT_METADATA_HOST
    request = urllib.request.Request(f"http://{host}/computeMetadata/v1/instance/maintenance-event",
                                     headers={"Metadata-Flavor": "Google"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.read().decode().strip()
    except (OSError, ValueError):  # URLError and timeouts are OSErrors
        return None


class MaintenanceWatcher:
    """A context manager polling `maintenance_event` every `interval` seconds from a daemon thread;
    `take()` is True once for each new `TERMINATE_ON_HOST_MAINTENANCE` notice.

    Args:
        host: the metadata server's address (None: as `maintenance_event`).
        interval: seconds between polls.

    >>> with MaintenanceWatcher(host="127.0.0.1:9") as watcher:
    ...     watcher.take()
    False
    """

    def __init__(self, host=None, interval=5.0):
        self.host, self.interval = host, interval
        self._notice = threading.Event()
        self._stop = threading.Event()
        self._thread = None

    def take(self):
        """True when a notice came since the last call."""
        if not self._notice.is_set():
            return False
        self._notice.clear()
        return True

    def __enter__(self):
        self._stop.clear()  # a run may train again after its watch ended
        self._thread = threading.Thread(target=self._watch, name="maintenance-watcher", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()  # not joined: a poll under way may take its timeout, and a stopping run has no time
        return False

    def _watch(self):
        current = maintenance_event(self.host)
        if current is None:
            return  # not on Google Cloud
        announced = False
        while True:
            if current == TERMINATE and not announced:
                logging.warning("Host maintenance announced (%s): saving a checkpoint after the current loop; "
                                "training goes on until the VM stops.", TERMINATE)
                self._notice.set()
            announced = current == TERMINATE  # a later notice, after this maintenance, counts again
            if self._stop.wait(self.interval):
                return
            current = maintenance_event(self.host) or current  # a failed poll on Google Cloud is a hiccup
