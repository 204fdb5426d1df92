"""`TokenizerSettings`: how text is normalized for a vocab (lower-casing, accent stripping), and the settings file
that travels beside the vocab.

A vocab's tokens are only right for text normalized as the text it was learned from: an uncased vocab holds no
"Für", a vocab learned with accents stripped holds no "für". So `bert-vocab` writes the settings beside the vocab
it learns, and every command that reads the vocab reads them, unless its flag is given; a flag that contradicts
them is refused. The file is JSON, named after the vocab with its `.txt` dropped and `.settings.json` added
(`vocab.txt` -> `vocab.settings.json`), with Hugging Face's key names:

    {"format_version": 1, "do_lower_case": true, "strip_accents": false}

A vocab without the file (Google's released vocabs, any vocab written by hand) keeps the original's defaults:
`do_lower_case` true, and `strip_accents` as `do_lower_case` (the original strips accents when it lower-cases).
A file with a key this package does not know (written by a newer version) is refused rather than half-read.

Example:
>>> settings_path("data/vocab.txt"), settings_path("gs://bucket/wiki_vocab")
('data/vocab.settings.json', 'gs://bucket/wiki_vocab.settings.json')
>>> TokenizerSettings.of(do_lower_case=True)
TokenizerSettings(do_lower_case=True, strip_accents=True)
>>> TokenizerSettings.of(do_lower_case=True, strip_accents=False).to_json()
'{"format_version": 1, "do_lower_case": true, "strip_accents": false}'
"""

import dataclasses
import functools
import json
import os

from bert_tf.errors import InputError
from bert_tf.file_format import with_format_version, without_format_version
from bert_tf.file_io import file_exists, read_text
from bert_tf.text.normalization import normalize, strips_accents

SETTINGS_SUFFIX = ".settings.json"
DO_LOWER_CASE_HELP = ("Lower-case the text (an uncased vocab); without --strip_accents it also strips accents, as "
                      "the original flag does. Default: the vocab's settings file (VOCAB.settings.json), else true.")
STRIP_ACCENTS_HELP = ("Strip accents (decompose, then drop every combining mark: ü -> u, が -> か). Default: the "
                      "vocab's settings file, else as --do_lower_case.")


def json_object(text, where, fix):
    """The JSON object `text` holds; anything else is an `InputError` naming `where` and the `fix`."""
    try:
        values = json.loads(text)
    except ValueError as error:
        raise InputError(f"{where} is not JSON ({error}): {fix}.") from None
    if not isinstance(values, dict):
        raise InputError(f"{where} holds {type(values).__name__}, not a JSON object: {fix}.")
    return values


def settings_path(vocab_file):
    """The settings file that belongs to `vocab_file`: beside it, its name without `.txt` plus `.settings.json`."""
    vocab_file = os.fspath(vocab_file)
    stem = vocab_file[:-len(".txt")] if vocab_file.endswith(".txt") else vocab_file
    return stem + SETTINGS_SUFFIX


@dataclasses.dataclass(frozen=True)
class TokenizerSettings:
    """How text is normalized before WordPiece for one vocab.

    Args:
        do_lower_case: lower-case the text (`str.lower`).
        strip_accents: decompose (NFD) and drop the non-spacing marks (category Mn).

    Example:
    >>> settings = TokenizerSettings.of(do_lower_case=False)
    >>> settings.strip_accents, settings.describe()
    (False, 'do_lower_case=false, strip_accents=false')
    """

    do_lower_case: bool = True
    strip_accents: bool = True

    @classmethod
    def of(cls, do_lower_case=True, strip_accents=None):
        """Settings from the two flags' values; `strip_accents` None follows `do_lower_case` (the original)."""
        return cls(bool(do_lower_case), strips_accents(do_lower_case, strip_accents))

    def normalizer(self):
        """`normalize` under these settings, as a picklable str -> str (for `count_words`' processes)."""
        return functools.partial(normalize, do_lower_case=self.do_lower_case, strip_accents=self.strip_accents)

    def describe(self):
        """The two settings as a user reads them in a message."""
        return f"do_lower_case={str(self.do_lower_case).lower()}, strip_accents={str(self.strip_accents).lower()}"

    def to_json(self):
        """The settings file's text."""
        return json.dumps(with_format_version(dataclasses.asdict(self)))

    @classmethod
    def from_json(cls, text, where):
        """Settings from a settings file's text; `where` names the file in errors."""
        values = json_object(text, where, "write it again with bert-vocab, or delete it to use the default settings")
        values = without_format_version(values, where)
        unknown = sorted(set(values) - {field.name for field in dataclasses.fields(cls)})
        if unknown:
            raise InputError(f"{where} has settings this bert_tf does not know: {unknown}: upgrade bert_tf, or "
                             f"remove them if they were added by hand.")
        return cls.from_mapping(values, where)

    @classmethod
    def from_mapping(cls, values, where):
        """Settings from a mapping with Hugging Face's keys (other keys are not read): `do_lower_case` (default
        true) and `strip_accents` (default, or null: as `do_lower_case`), as HF's `BertTokenizer` reads them."""
        for name in ("do_lower_case", "strip_accents"):
            if not isinstance(values.get(name), (bool, type(None))):
                raise InputError(f"{where}: {name} is {values[name]!r}; it must be true, false or null.")
        lower = values.get("do_lower_case")
        return cls.of(True if lower is None else lower, values.get("strip_accents"))

    @classmethod
    def read(cls, vocab_file):
        """The settings written beside `vocab_file`, or None when it has no settings file."""
        path = settings_path(vocab_file)
        if not file_exists(path):
            return None
        return cls.from_json(read_text(path), path)

    @classmethod
    def for_vocab(cls, vocab_file, do_lower_case=None, strip_accents=None):
        """The settings to tokenize with for `vocab_file`: the flags given (not None) over its settings file, over
        the defaults. A flag that contradicts the file is an `InputError` naming both.

        Example:
        >>> TokenizerSettings.for_vocab("released/vocab.txt", do_lower_case=False)  # doctest: +SKIP
        TokenizerSettings(do_lower_case=False, strip_accents=False)
        """
        saved = cls.read(vocab_file) if vocab_file else None
        where = f"{settings_path(vocab_file)}, the settings the vocab was learned with" if saved else None
        return cls.resolve(saved, where, do_lower_case, strip_accents)

    @classmethod
    def resolve(cls, saved, where, do_lower_case=None, strip_accents=None):
        """`saved` settings (None: none saved, the defaults apply) under the flags given; a flag that contradicts
        them is an `InputError` naming `where` they come from.

        Example:
        >>> TokenizerSettings.resolve(None, None, strip_accents=False)
        TokenizerSettings(do_lower_case=True, strip_accents=False)
        >>> TokenizerSettings.resolve(TokenizerSettings.of(False), "model/vocab.settings.json", do_lower_case=True)
        Traceback (most recent call last):
        bert_tf.errors.InputError: --do_lower_case contradicts model/vocab.settings.json (do_lower_case=false, \
strip_accents=false): drop the flag, or use a vocab made with it.
        """
        if saved is None:
            return cls.of(True if do_lower_case is None else do_lower_case, strip_accents)
        given = {"do_lower_case": do_lower_case, "strip_accents": strip_accents}
        for name, value in given.items():
            if value is not None and bool(value) != getattr(saved, name):
                flag = f"--{name}" if value else f"--no{name}"
                raise InputError(f"{flag} contradicts {where} ({saved.describe()}): drop the flag, or use a vocab "
                                 f"made with it.")
        return saved

    def write_beside(self, vocab_file):
        """Writes the settings file of `vocab_file` atomically; returns its path, or None when the vocab went to a
        device (/dev/null) rather than a file, where nothing would read a settings file beside it."""
        from bert_tf.atomic_output import node_kind, write_text_atomically

        if node_kind(vocab_file) != "file":
            return None
        path = settings_path(vocab_file)
        write_text_atomically(path, self.to_json() + "\n")
        return path

