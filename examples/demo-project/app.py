"""A tiny project an agent works on in the sandgate demo."""


def greeting():
    try:
        import sandgate_demo
    except ImportError:
        return "sandgate_demo is not installed"
    return sandgate_demo.hello()


if __name__ == "__main__":
    print(greeting())
