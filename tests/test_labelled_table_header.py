"""A labelled TSV or CSV without its header row: `bert-finetune`'s reader says so in one short line and suggests
the header, instead of quoting a whole first example as the "header"."""

import pytest

from bert_tf.errors import InputError
from bert_tf.finetuning.examples import read_table

pytestmark = pytest.mark.slow  # not in `make test-fast` (pytest.ini)

ARTICLE = ("Ad sales boost Time Warner profit. Quarterly profits at US media giant TimeWarner jumped 76% to $1.13bn "
           "for the three months to December, from $639m year-earlier. ") * 16


def test_a_headerless_tsv_gets_the_missing_header_suggested(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_text(f"{ARTICLE}\tbusiness\nAnother article.\tsport\n")
    with pytest.raises(InputError) as error:
        read_table(str(path), text_column="text", label_column="label")
    message = str(error.value)
    assert len(ARTICLE) > 2000 and len(message) < 400, message  # the article is cut, not quoted whole
    assert "['Ad sales boost Time Warner pr\u2026', 'business']" in message
    assert "looks like an example, not a header row" in message and "(e.g. text\\tlabel)" in message
    assert "\n" not in message


def test_a_headerless_csv_gets_a_comma_separated_suggestion(tmp_path):
    path = tmp_path / "dev.csv"
    path.write_text(f'"{ARTICLE}",business\n')
    with pytest.raises(InputError, match=r"\(e\.g\. text,label\)"):
        read_table(str(path), text_column="text", label_column="label")


def test_a_header_with_other_names_is_still_named_as_the_header(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_text("sentence\tcategory\nA short one.\tsport\n")
    with pytest.raises(InputError) as error:
        read_table(str(path), text_column="text", label_column="label")
    assert "its header is ['sentence', 'category']; pass --text_column" in str(error.value)
    assert "looks like an example" not in str(error.value)
