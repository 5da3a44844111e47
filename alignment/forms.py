"""Forms for the import page."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings

from alignment.importing.language import LANGUAGE_DETECT
from alignment.importing.layout import PARAGRAPH_MODE_LABELS
from alignment.importing.patterns import PATTERN_MAX_LENGTH
from alignment.importing.readers import DEFAULT_FILENAME_PATTERN, FORMATS, ImportOptions, file_levels
from alignment.levels import LEVEL_ORDER_MAX_CHARS, level_order_parse, level_order_refusal
from alignment.models import Corpus


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    widget = MultipleFileInput

    def clean(self, data, initial=None):
        single = super().clean
        if isinstance(data, (list, tuple)):
            if not data and self.required:  # no file chosen: the browser sends none, and no single clean() would run
                raise forms.ValidationError(self.error_messages["required"], code="required")
            return [single(d, initial) for d in data]
        return [single(data, initial)]


FORMAT_HELP = {
    "text": "one .txt file per document; id and level from the file name",
    "csv": "one column per level, one row per paragraph",
    "jsonl": "one JSON object per line: id, title, level, text | paragraphs | sentences",
    "presplit": "one sentence per line, blank line between paragraphs",
}


class CorpusImportForm(forms.Form):
    corpus_name = forms.CharField(
        max_length=200,
        help_text="An existing corpus adds the new documents; a new name creates it.",
        widget=forms.TextInput(attrs={"list": "corpus-names", "autocomplete": "off"}),
    )
    language = forms.CharField(
        max_length=16, required=False, initial=LANGUAGE_DETECT,
        widget=forms.TextInput(attrs={"placeholder": "detect from the text", "autocomplete": "off"}),
        help_text="ISO 639-1 code, e.g. en or de. Leave it empty to detect a new corpus's language from its text "
        "(an existing corpus keeps its own).",
    )  # fmt: skip
    format = forms.ChoiceField(choices=[(f, f"{f}: {FORMAT_HELP[f]}") for f in FORMATS], initial="text")
    paragraph_mode = forms.ChoiceField(
        choices=[("auto", "detect it in each file"), *PARAGRAPH_MODE_LABELS.items()],
        initial="auto",
        help_text="For the text format. Detect: when most lines end a sentence (or are headings), each line is a "
        "paragraph; wrapped lines are joined up to a blank line. Preview shows what it finds.",
    )
    filename_pattern = forms.CharField(
        max_length=PATTERN_MAX_LENGTH,
        initial=DEFAULT_FILENAME_PATTERN,
        help_text="Regular expression with groups id and level, applied to the file name without extension.",
    )
    drop_level_header = forms.BooleanField(required=False, help_text="Drop a first line such as “Intermediate”.")
    pairing = forms.ChoiceField(choices=Corpus.Pairing.choices, initial=Corpus.Pairing.ALL, help_text="For a new corpus.")
    level_order = forms.CharField(
        required=False, max_length=LEVEL_ORDER_MAX_CHARS, label="Level order",
        widget=forms.TextInput(attrs={"autocomplete": "off", "placeholder": "automatic: known levels, else readability"}),
        help_text="Levels of the files from most complex to simplest, separated by commas (C2, B1, A2). Leave it empty to "
        "order known levels (CEFR, adv/int/ele, numbers, Leichte/Einfache Sprache) by their scheme and others by "
        "readability; Preview shows which side will be complex.",
    )  # fmt: skip
    files = MultipleFileField(help_text="One or more files.")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["files"].help_text = (
            f"One or more files: at most {settings.IMPORT_MAX_FILES:,} in one upload, "
            f"{settings.IMPORT_MAX_FILE_BYTES / 2**20:g} MiB each and {settings.IMPORT_MAX_REQUEST_BYTES / 2**20:g} MiB in all."
        )

    def import_options(self, *, max_file_bytes: int) -> ImportOptions:
        """The reading options of a valid form (ValueError when they are refused)."""
        data = self.cleaned_data
        return ImportOptions(
            format=data["format"], language=data["language"], paragraph_mode=data["paragraph_mode"],
            filename_pattern=data["filename_pattern"], drop_level_header=data["drop_level_header"], max_file_bytes=max_file_bytes,
            level_order=data["level_order"],
        )  # fmt: skip

    def suggest_level_order(self, order: list[str]) -> None:
        """Show the order the import would choose in the empty level-order field, as its placeholder."""
        self.fields["level_order"].widget.attrs["placeholder"] = f"automatic: {', '.join(order)}"

    def clean_level_order(self) -> tuple[str, ...]:
        try:
            return level_order_parse(self.cleaned_data["level_order"])
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean_filename_pattern(self) -> str:
        pattern = self.cleaned_data["filename_pattern"]
        try:
            ImportOptions(filename_pattern=pattern)
        except ValueError as exc:
            raise forms.ValidationError(str(exc).removeprefix("filename_pattern: ")) from None
        return pattern

    def clean(self) -> dict:
        """Refuse a file-name pattern that is too slow on one of the uploaded names before anything is imported."""
        cleaned = super().clean()
        pattern, files, file_format = cleaned.get("filename_pattern"), cleaned.get("files"), cleaned.get("format")
        if pattern and files and file_format:
            try:
                ImportOptions(format=file_format, filename_pattern=pattern).check_filename_pattern(f.name for f in files)
            except ValueError as exc:
                self.add_error("filename_pattern", str(exc))
        if cleaned.get("level_order") and files and file_format and "filename_pattern" not in self.errors:
            options = ImportOptions(format=file_format, filename_pattern=pattern)
            error = level_order_refusal(cleaned["level_order"], _uploaded_levels(files, options))
            if error:
                self.add_error("level_order", error)
        return cleaned


def _uploaded_levels(files, options: ImportOptions) -> list[str]:
    """The levels of the uploaded files, in the order they first appear (each file is read, then rewound)."""
    levels: dict[str, None] = {}
    for uploaded in files:
        levels.update(dict.fromkeys(file_levels(uploaded.name, uploaded.read(), options)))
        uploaded.seek(0)
    return list(levels)


class CorpusLanguageForm(forms.Form):
    """The corpus page's language field; the service checks the code against the known languages."""

    language = forms.CharField(max_length=16, help_text="ISO 639-1 code, e.g. en or de; und when it is not known.")


class CorpusImportPreviewForm(CorpusImportForm):
    """The import form as *Preview* reads it: the corpus is not needed to look at the files."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["corpus_name"].required = False


MEASURE_CHOICES = [
    ("embedding_cosine", "Embedding cosine (MiniLM, stored vectors)"),
    ("tfidf_cosine", "TF-IDF cosine"),
    ("char3_tfidf_cosine", "Character 3-gram TF-IDF (CATS)"),
    ("jaccard", "Jaccard word overlap"),
    ("word_average", "Word alignment: average (slow)"),
    ("word_max", "Word alignment: maximum, symmetric (slow)"),
    ("word_hungarian", "Word alignment: Hungarian (slow)"),
    ("word_movers", "Word Mover's Distance (slow)"),
    ("cross_encoder", "Cross-encoder classifier (needs a fine-tuned model; very slow on CPU)"),
]
# The measure the CRF decodes with: the configured trained model's learned scorer, or any measure untrained.
PRIMARY_MEASURE_CHOICES = [("learned", "Learned pair scorer (the shipped default model, or ALIGNER_MODEL_DIR's)"), *MEASURE_CHOICES]
PARAGRAPH_CHOICES = [
    ("newsela", "Newsela (Algorithms 1-2)"),
    ("wikipedia", "Wikipedia (Algorithms 3-4)"),
    ("none", "No paragraph alignment"),
]


class AlignmentRunForm(forms.Form):
    """What a researcher picks when starting a run; everything else is the aligner's default config.

    The learned pair scorer is the configured model (ALIGNER_MODEL_DIR, by default the shipped one);
    any other measure runs the untrained, hand-calibrated CRF on that measure.
    """

    measure = forms.ChoiceField(
        choices=PRIMARY_MEASURE_CHOICES,
        initial="learned",
        help_text="The measure the CRF aligns with; other than the learned scorer, the CRF is untrained.",
    )
    paragraph_variant = forms.ChoiceField(choices=PARAGRAPH_CHOICES, initial="newsela")
    also_score = forms.MultipleChoiceField(
        choices=MEASURE_CHOICES,
        initial=["embedding_cosine", "char3_tfidf_cosine"],
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text=(
            "Extra measures stored for every candidate, for comparison and disagreement. With the learned scorer the "
            "first and third cost next to nothing (stored vectors; its own features); each other one adds time."
        ),
    )

    def run_arguments(self) -> dict:
        data = self.cleaned_data
        measures = [data["measure"], *[m for m in data["also_score"] if m != data["measure"]]]
        return {"aligner_config": {"measure": data["measure"], "paragraph_variant": data["paragraph_variant"]}, "measures": measures}
