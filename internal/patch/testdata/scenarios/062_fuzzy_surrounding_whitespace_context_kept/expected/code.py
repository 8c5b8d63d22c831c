def f(x):
    if x:  
        return 10
    y = 2
    return y + 1
