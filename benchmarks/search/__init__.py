"""How well search finds: ``index_recall`` (recall@k of the default pipeline's LanceDB
vector index against an exact search).
"""
