print("hub-stress")
