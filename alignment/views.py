def corpus_list(r): pass
corpus_import=corpus_detail=corpus_embed=corpus_jobs=embedding_run_retry=pair_detail=corpus_list
