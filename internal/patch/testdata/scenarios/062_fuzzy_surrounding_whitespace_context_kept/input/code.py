def f(x):
    if x:  
        return 1
    y = 2
    return y
