print("bench-model")
