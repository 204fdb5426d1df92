"""Exporting over a version that already holds a SavedModel is refused with the next free `--version` named."""

import pytest

from bert_tf.errors import OutputExistsError
from bert_tf.serving.export import check_free

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)


def test_the_refusal_names_the_next_free_version(tmp_path):
    for version in ("1", "3"):
        (tmp_path / "classifier" / version).mkdir(parents=True)
        (tmp_path / "classifier" / version / "saved_model.pb").write_bytes(b"")
    (tmp_path / "classifier" / "notes").mkdir()
    with pytest.raises(OutputExistsError, match=r"already holds a SavedModel: .* \(--version=4\)"):
        check_free(str(tmp_path / "classifier" / "1"))
    check_free(str(tmp_path / "classifier" / "4"))  # a free version passes
