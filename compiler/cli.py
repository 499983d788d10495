def main(argv=None):
    print("scenec")
    return 0
