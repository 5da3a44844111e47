from alignment.models import Document, DocumentPair, Sentence


def test_tram_corpus_imports(tram_corpus):
    assert Document.objects.filter(corpus=tram_corpus).count() == 2
    assert DocumentPair.objects.filter(corpus=tram_corpus).count() == 1
    pair = DocumentPair.objects.get()
    assert pair.complex_document.level == "adv"
    for s in Sentence.objects.all():
        assert s.document.raw_text[s.char_start : s.char_end] == s.text
    assert Sentence.objects.filter(document__level="adv").count() == 5
