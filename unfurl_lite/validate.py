def check(doc, file):
    return []
