print("docsync")
