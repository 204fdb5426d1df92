"""Google Cloud's host-maintenance notice, served by a local metadata server: the watcher reads it with the
metadata header, reports each notice once, and a run given the notice saves a checkpoint at once and trains on."""

import http.server
import os
import threading
import time

import pytest
import tensorflow as tf

from bert_tf.training.maintenance_notice import METADATA_HOST_VARIABLE, MaintenanceWatcher, maintenance_event
from bert_tf.training.pretraining import run_pretraining
from bert_tf.training.recipe import Recipe
from pretraining_records import one_phase_tiny_recipe

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)


@pytest.fixture
def metadata_server():
    """A metadata server on 127.0.0.1 whose maintenance event is `server.event`; it answers only requests that
    carry the `Metadata-Flavor: Google` header, as Google's does."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            ok = (self.path == "/computeMetadata/v1/instance/maintenance-event"
                  and self.headers.get("Metadata-Flavor") == "Google")
            body = server.event.encode() if ok else b"forbidden"
            self.send_response(200 if ok else 403)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.event = "NONE"
    server.address = f"127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    thread.join()


def wait_until(condition, seconds=10):
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_watcher_reports_each_notice_once(metadata_server):
    assert maintenance_event(metadata_server.address) == "NONE"
    with MaintenanceWatcher(metadata_server.address, interval=0.05) as watcher:
        time.sleep(0.3)
        assert not watcher.take()
        metadata_server.event = "MIGRATE_ON_HOST_MAINTENANCE"  # CPU VMs migrate live: nothing to do
        time.sleep(0.3)
        assert not watcher.take()
        metadata_server.event = "TERMINATE_ON_HOST_MAINTENANCE"
        assert wait_until(watcher.take)
        time.sleep(0.3)
        assert not watcher.take()  # the same notice, still announced
        metadata_server.event = "NONE"  # the maintenance is over; the next one is a new notice
        time.sleep(0.3)
        metadata_server.event = "TERMINATE_ON_HOST_MAINTENANCE"
        assert wait_until(watcher.take)


def test_no_metadata_server_means_no_notice():
    with MaintenanceWatcher("127.0.0.1:9", interval=0.05) as watcher:
        assert watcher._thread.join(5) is None and not watcher._thread.is_alive()
        assert not watcher.take()


def test_a_run_given_the_notice_saves_at_once_and_trains_on(metadata_server, monkeypatch, tmp_path):
    metadata_server.event = "TERMINATE_ON_HOST_MAINTENANCE"
    monkeypatch.setenv(METADATA_HOST_VARIABLE, metadata_server.address)
    recipe = Recipe.from_dict(one_phase_tiny_recipe(tmp_path, "maintenance_test"))
    model_dir = str(tmp_path / "run")
    result = run_pretraining(recipe, model_dir, peak_tflops=1.0)
    assert result.completed and not result.preempted
    # Saved after the first loop (step 5), though the recipe saves only every 1000 steps, then at the end.
    saved = tf.train.get_checkpoint_state(model_dir).all_model_checkpoint_paths
    assert [int(path.rsplit("-", 1)[1]) for path in saved] == [5, 20], saved
    assert os.path.exists(os.path.join(model_dir, "ckpt-5.index"))
